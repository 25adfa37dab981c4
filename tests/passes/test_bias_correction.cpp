#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/interp/session.h"
#include "libquant/passes/bias_correction.h"
#include "tests/passes/qdq_graph.h"

using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;
using quant::testing::random_tensor;
using quant::testing::run_graph;

namespace {

// W [3, 2, 3, 3]: every weight 0.304 except w[c, 0, 0, 0] = 1.27 (channel c's
// absmax), so int8 per-channel scales are 0.01 and every other weight rounds
// to 0.30: a known error of -0.004 on 17 of each channel's 18 weights.
Tensor weights() {
  Tensor w(quant::DType::Float32, {3, 2, 3, 3});
  for (int64_t i = 0; i < w.size(); ++i) w.data<float>()[i] = i % 18 == 0 ? 1.27f : 0.304f;
  return w;
}

void conv_graph(Graph& g, Value* weight, Value* bias) {
  g.opset_imports[""] = 13;
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  g.inputs = {x};
  Value* y = g.add_value("y");
  y->dtype = quant::DType::Float32;
  auto* conv = g.add_node("Conv", {x, weight, bias}, {y}, "conv");
  conv->attributes["pads"] = quant::ir::Attribute::of_ints({1, 1, 1, 1});
  g.outputs = {y};
}

// The float graph's bias; the quantized graph's weight DQ(int8, per channel)
// and bias DQ(int32, scale 1e-4) or float.
void quantized_graph(Graph& g, const Tensor& bias, bool int32_bias) {
  Tensor q(quant::DType::Int8, {3, 2, 3, 3});
  const Tensor w = weights();
  for (int64_t i = 0; i < w.size(); ++i) q.data<int8_t>()[i] = static_cast<int8_t>(std::nearbyint(w.data<float>()[i] / 0.01f));
  Value* qv = quant::passes::add_constant(g, "w_quantized", std::move(q));
  Value* ws = quant::passes::add_constant(g, "w_scale", Tensor::from_vector<float>({3}, {0.01f, 0.01f, 0.01f}));
  Value* wz = quant::passes::add_constant(g, "w_zero_point", Tensor(quant::DType::Int8, {3}));
  std::fill(wz->constant->data<int8_t>(), wz->constant->data<int8_t>() + 3, int8_t{0});
  Value* wdq = g.add_value("w_dequantized");
  wdq->dtype = quant::DType::Float32;
  g.add_node("DequantizeLinear", {qv, ws, wz}, {wdq}, "w_dq")->attributes["axis"] = quant::ir::Attribute::of_int(0);
  Value* b = nullptr;
  if (int32_bias) {
    Tensor qb(quant::DType::Int32, {3});
    for (int64_t c = 0; c < 3; ++c) qb.data<int32_t>()[c] = static_cast<int32_t>(std::nearbyint(bias.data<float>()[c] / 1e-4f));
    Value* bq = quant::passes::add_constant(g, "b_quantized", std::move(qb));
    Value* bs = quant::passes::add_constant(g, "b_scale", Tensor::from_vector<float>({}, {1e-4f}));
    b = g.add_value("b_dequantized");
    b->dtype = quant::DType::Float32;
    g.add_node("DequantizeLinear", {bq, bs}, {b}, "b_dq");
  } else {
    b = quant::passes::add_constant(g, "b", bias);
  }
  conv_graph(g, wdq, b);
}

// Mean over samples and positions of (quantized - float) output, per channel.
std::vector<double> mean_error(const Graph& q, const Graph& f, const std::vector<Tensor>& xs) {
  std::vector<double> err(3, 0.0);
  int64_t n = 0;
  for (const Tensor& x : xs) {
    Tensor a = run_graph(q, {x})[0], b = run_graph(f, {x})[0];
    const int64_t plane = a.size() / 3;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i) err[static_cast<size_t>(c)] += a.data<float>()[c * plane + i] - b.data<float>()[c * plane + i];
    n += plane;
  }
  for (double& e : err) e /= static_cast<double>(n);
  return err;
}

}  // namespace

TEST_CASE("bias correction takes the mean output error of weight rounding back into the bias", "[passes][bias_correction]") {
  std::mt19937 rng(21);
  const Tensor bias = Tensor::from_vector<float>({3}, {0.5f, -0.25f, 0.125f});
  Graph flt;
  conv_graph(flt, quant::passes::add_constant(flt, "w", weights()), quant::passes::add_constant(flt, "b", bias));
  std::vector<Tensor> xs;
  for (int s = 0; s < 8; ++s) xs.push_back(random_tensor({1, 2, 5, 5}, rng, 0, 2));

  quant::passes::InputMeanCollector collector(flt);
  auto session = quant::interp::Session::create(flt);
  REQUIRE(session.has_value());
  for (const Tensor& x : xs)
    REQUIRE((*session)->run({x}, [&](const quant::ir::Value& v, const Tensor& t) { collector.observe(v, t); }).has_value());
  REQUIRE(collector.means().count("conv") == 1);
  const auto weights_by_node = quant::passes::float_weights(flt, collector.means());
  REQUIRE(weights_by_node.count("conv") == 1);

  for (bool int32_bias : {true, false}) {
    Graph q;
    quantized_graph(q, bias, int32_bias);
    // Before: 17 weights of each channel read -0.004 too little, x ~ 1 on
    // average (less at the padded borders): the mean error is about -0.05.
    const auto before = mean_error(q, flt, xs);
    for (double e : before) CHECK(e < -0.03);
    std::vector<std::string> notes;
    REQUIRE(quant::passes::correct_biases(q, weights_by_node, collector.means(), notes).is_ok());
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Catch::Contains("(W_q - W) E[x]"));
    // After: the mean error left is the corrected bias's own rounding (half
    // a step of 1e-4) plus float noise.
    const auto after = mean_error(q, flt, xs);
    for (double e : after) CHECK(std::abs(e) < (int32_bias ? 6e-5 : 1e-5));
    if (int32_bias) CHECK(q.find_value("b_quantized")->constant->dtype() == quant::DType::Int32);
  }
}

TEST_CASE("add_missing_biases gives measured layers a zero bias", "[passes][bias_correction]") {
  Graph g;
  conv_graph(g, quant::passes::add_constant(g, "w", weights()), nullptr);
  g.nodes()[0]->inputs.resize(2);
  quant::passes::InputMeanCollector collector(g);
  auto session = quant::interp::Session::create(g);
  REQUIRE(session.has_value());
  std::mt19937 rng(1);
  REQUIRE((*session)->run({random_tensor({1, 2, 4, 4}, rng, -1, 1)}, [&](const quant::ir::Value& v, const Tensor& t) {
    collector.observe(v, t);
  }).has_value());
  quant::passes::add_missing_biases(g, collector.means());
  const quant::ir::Node* conv = g.nodes()[0].get();
  REQUIRE(conv->inputs.size() == 3);
  const Tensor* b = quant::ir::constant_data(conv->input(2));
  REQUIRE(b != nullptr);
  CHECK(b->size() == 3);
  CHECK(b->data<float>()[0] == 0.0f);
}
