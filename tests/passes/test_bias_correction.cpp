#include <catch2/catch.hpp>

#include <algorithm>
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

// A float32 value of an opset-13 graph; its only input when `input`.
Value* float_value(Graph& g, const std::string& name, bool input = false) {
  g.opset_imports[""] = 13;
  Value* v = g.add_value(name);
  v->dtype = quant::DType::Float32;
  if (input) g.inputs = {v};
  return v;
}

void conv_graph(Graph& g, Value* weight, Value* bias) {
  Value* x = float_value(g, "x", true);
  Value* y = float_value(g, "y");
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
  Value* wdq = float_value(g, "w_dequantized");
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

TEST_CASE("bias correction of a MatMul goes into the Add after it, through its Q/DQ pair", "[passes][bias_correction]") {
  // x [2, 3, 4] -> MatMul(W [4, 2]) -> m -> Add(c) -> y. Rows 1-3 of W round
  // by +0.02 (scale 0.1: 0.28 -> 0.3; row 0, 1.0, is exact), x = 1: the mean
  // output error is 3 * 0.02 = 0.06 per column.
  Tensor w = Tensor::from_vector<float>({4, 2}, {1.0f, 1.0f, 0.28f, 0.28f, 0.28f, 0.28f, 0.28f, 0.28f});
  std::vector<float> wq_values = {1.0f, 1.0f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f};
  auto build = [&](Graph& g, Value* weight, bool qdq_between) {
    Value* x = float_value(g, "x", true);
    Value* m = float_value(g, "m");
    g.add_node("MatMul", {x, weight}, {m}, "mm");
    Value* into = m;
    if (qdq_between) {
      Value *q = g.add_value("m_q"), *dq = float_value(g, "m_dq");
      q->dtype = quant::DType::UInt8;
      Value* s = quant::passes::add_constant(g, "m_scale", Tensor::from_vector<float>({}, {0.01f}));
      Value* z = quant::passes::add_constant(g, "m_zp", quant::testing::zero_point(quant::DType::UInt8, 0));
      g.add_node("QuantizeLinear", {m, s, z}, {q}, "m_QuantizeLinear");
      g.add_node("DequantizeLinear", {q, s, z}, {dq}, "m_DequantizeLinear");
      into = dq;
    }
    Value* y = float_value(g, "y");
    g.add_node("Add", {into, quant::passes::add_constant(g, "c", Tensor::from_vector<float>({2}, {0.5f, 0.5f}))}, {y}, "add");
    g.outputs = {y};
  };
  Graph flt;
  build(flt, quant::passes::add_constant(flt, "w", w), false);
  quant::passes::InputMeanCollector collector(flt);
  auto session = quant::interp::Session::create(flt);
  REQUIRE(session.has_value());
  Tensor x(quant::DType::Float32, {2, 3, 4});
  std::fill(x.data<float>(), x.data<float>() + x.size(), 1.0f);
  REQUIRE((*session)->run({x}, [&](const quant::ir::Value& v, const Tensor& t) { collector.observe(v, t); }).has_value());
  REQUIRE(collector.means().count("mm") == 1);
  CHECK(collector.means().at("mm").count == 6);

  Graph q;
  Tensor codes(quant::DType::Int8, {4, 2});
  for (int64_t i = 0; i < 8; ++i) codes.data<int8_t>()[i] = static_cast<int8_t>(std::lround(wq_values[static_cast<size_t>(i)] / 0.1f));
  Value* wdq = float_value(q, "w_dequantized");
  q.add_node("DequantizeLinear", {quant::passes::add_constant(q, "w_quantized", std::move(codes)),
                                  quant::passes::add_constant(q, "w_scale", Tensor::from_vector<float>({}, {0.1f}))},
             {wdq}, "w_dq");
  build(q, wdq, true);
  std::vector<std::string> notes;
  REQUIRE(quant::passes::correct_biases(q, quant::passes::float_weights(flt, collector.means()), collector.means(), notes).is_ok());
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("'mm'"));
  const Tensor& c = *q.find_value("c")->constant;
  CHECK(c.data<float>()[0] == Approx(0.5 - 0.06).margin(1e-6));
  CHECK(c.data<float>()[1] == Approx(0.5 - 0.06).margin(1e-6));
}
