#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

#include "libquant/interp/compare.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/interp/session.h"
#include "libquant/passes/qdq.h"
#include "tests/passes/qdq_graph.h"

using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;
using quant::testing::profile_of;
using quant::testing::random_tensor;

namespace {

// x[1,2,4,4] -> Conv(4 out, 3x3, pad 1) -> y -> Relu -> r -> Flatten -> f -> Gemm(10) -> logits
void build(Graph& g, std::mt19937& rng) {
  g.opset_imports[""] = 13;
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  x->has_shape = true;
  x->shape = {1, 2, 4, 4};
  g.inputs = {x};
  Value* w = quant::passes::add_constant(g, "w", random_tensor({4, 2, 3, 3}, rng, -1, 1));
  // Channel 3 has weights 100x smaller than channel 0: per-channel scales must follow.
  for (int i = 0; i < 18; ++i) w->constant->data<float>()[3 * 18 + i] *= 0.01f;
  Value* b = quant::passes::add_constant(g, "b", random_tensor({4}, rng, -0.5f, 0.5f));
  auto act = [&](const char* n) {
    Value* v = g.add_value(n);
    v->dtype = quant::DType::Float32;
    return v;
  };
  Value *y = act("y"), *r = act("r"), *f = act("f"), *logits = act("logits");
  auto* conv = g.add_node("Conv", {x, w, b}, {y}, "conv");
  conv->attributes["pads"] = quant::ir::Attribute::of_ints({1, 1, 1, 1});
  g.add_node("Relu", {y}, {r}, "relu");
  g.add_node("Flatten", {r}, {f}, "flatten");
  Value* w2 = quant::passes::add_constant(g, "w2", random_tensor({10, 64}, rng, -0.3f, 0.3f));
  Value* b2 = quant::passes::add_constant(g, "b2", random_tensor({10}, rng, -0.1f, 0.1f));
  auto* gemm = g.add_node("Gemm", {f, w2, b2}, {logits}, "gemm");
  gemm->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.outputs = {logits};
}

size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

}  // namespace

TEST_CASE("QDQ insertion: activations, fused Relu, per-channel weights, int32 bias", "[passes][qdq]") {
  std::mt19937 rng(7);
  Graph g;
  build(g, rng);
  std::vector<Tensor> samples;
  for (int i = 0; i < 16; ++i) samples.push_back(random_tensor({1, 2, 4, 4}, rng, -2, 2));
  auto profile = profile_of(g, samples);

  Graph fg;  // float twin
  std::mt19937 rng2(7);
  build(fg, rng2);

  auto report = quant::passes::insert_qdq(g, profile, {});
  INFO(report.status().message());
  REQUIRE(report.has_value());

  // x, r, f get Q/DQ; y (Conv -> Relu) does not; logits is a graph output and stays float.
  CHECK(count_op(g, "QuantizeLinear") == 3);
  CHECK(g.find_value("x_quantized") != nullptr);
  CHECK(g.find_value("r_quantized") != nullptr);
  CHECK(g.find_value("f_quantized") != nullptr);
  CHECK(g.find_value("y_quantized") == nullptr);
  CHECK(g.outputs[0]->name() == "logits");
  CHECK(g.outputs[0]->producer->op_type == "Gemm");
  // Weights: int8 initializers, per-channel scales along the output channel.
  const Value* wq = g.find_value("w_quantized");
  REQUIRE(wq);
  CHECK(wq->constant->dtype() == quant::DType::Int8);
  const Tensor* ws = quant::ir::constant_data(g.find_value("w_scale"));
  REQUIRE(ws);
  REQUIRE(ws->size() == 4);
  CHECK(ws->data<float>()[3] < ws->data<float>()[0] * 0.05f);
  CHECK(quant::ir::constant_data(g.find_value("w2_scale"))->size() == 10);  // transB: axis 0
  // Bias: int32 at s_x * s_w[c], zero point 0.
  const Value* bq = g.find_value("b_quantized");
  REQUIRE(bq);
  CHECK(bq->constant->dtype() == quant::DType::Int32);
  const float sx = quant::ir::constant_data(g.find_value("x_scale"))->data<float>()[0];
  const Tensor* bs = quant::ir::constant_data(g.find_value("b_scale"));
  for (int c = 0; c < 4; ++c) CHECK(bs->data<float>()[c] == sx * ws->data<float>()[c]);
  // The original float weights are gone.
  CHECK(g.find_value("w") == nullptr);
  // Report: a decision per node and per tensor.
  CHECK(report->nodes.size() == 4);
  CHECK(report->tensors.size() == 3 + 2 + 2);
  // Weight coverage: both weights (rank >= 2) quantized; biases are not weights.
  const auto cov = quant::passes::weight_coverage(*report);
  CHECK(cov.total == static_cast<int64_t>((4 * 2 * 3 * 3 + 10 * 64) * sizeof(float)));
  CHECK(cov.quantized == cov.total);

  // Quantized output stays close to float on the calibration data.
  auto qs = quant::interp::Session::create(g);
  auto fs = quant::interp::Session::create(fg);
  REQUIRE(qs.has_value());
  REQUIRE(fs.has_value());
  quant::interp::ErrorStats err;
  for (const Tensor& s : samples) {
    auto qo = (*qs)->run({s});
    auto fo = (*fs)->run({s});
    REQUIRE(qo.has_value());
    REQUIRE(fo.has_value());
    REQUIRE(err.add((*fo)[0], (*qo)[0]).is_ok());
  }
  CHECK(err.snr_db() > 25.0);
}

TEST_CASE("Static weight coverage: excluded nodes and non-weight constants count float", "[passes][qdq]") {
  std::mt19937 rng(11);
  Graph g;
  build(g, rng);
  // logits + table: a constant float input that is no weight stays float in a quantized Add.
  Value* table = quant::passes::add_constant(g, "table", random_tensor({1, 10}, rng, -1, 1));
  Value* out = g.add_value("out");
  out->dtype = quant::DType::Float32;
  g.add_node("Add", {g.outputs[0], table}, {out}, "add");
  g.outputs = {out};
  std::vector<Tensor> samples{random_tensor({1, 2, 4, 4}, rng, -1, 1)};
  auto profile = profile_of(g, samples);
  quant::passes::QuantizeOptions opt;
  opt.exclude_nodes = {"gemm"};
  auto report = quant::passes::insert_qdq(g, profile, opt);
  INFO(report.status().message());
  REQUIRE(report.has_value());
  const auto cov = quant::passes::weight_coverage(*report);
  const int64_t conv_bytes = 4 * 2 * 3 * 3 * 4, gemm_bytes = 10 * 64 * 4, table_bytes = 10 * 4;
  CHECK(cov.total == conv_bytes + gemm_bytes + table_bytes);
  CHECK(cov.quantized == conv_bytes);
  CHECK(cov.float_by_reason.at("Gemm: excluded by --exclude-node") == gemm_bytes);
  CHECK(cov.float_by_reason.at("Add: constant input other than the weight stays float") == table_bytes);
}

TEST_CASE("QDQ insertion refuses a profile without the activations", "[passes][qdq]") {
  std::mt19937 rng(1);
  Graph g;
  build(g, rng);
  quant::profile::Profile empty;
  auto report = quant::passes::insert_qdq(g, empty, {});
  REQUIRE_FALSE(report.has_value());
  CHECK_THAT(report.status().message(), Catch::Contains("profile has no entry"));
}

TEST_CASE("per-tensor weights give one scale", "[passes][qdq]") {
  std::mt19937 rng(3);
  Graph g;
  build(g, rng);
  std::vector<Tensor> samples{random_tensor({1, 2, 4, 4}, rng, -1, 1)};
  auto profile = profile_of(g, samples);
  quant::passes::QuantizeOptions opt;
  opt.per_channel = false;
  REQUIRE(quant::passes::insert_qdq(g, profile, opt).has_value());
  CHECK(quant::ir::constant_data(g.find_value("w_scale"))->size() == 1);
}
