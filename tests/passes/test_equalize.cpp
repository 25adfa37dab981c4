#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "libquant/passes/equalize.h"
#include "tests/passes/qdq_graph.h"

using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;
using quant::testing::random_tensor;
using quant::testing::run_graph;

namespace {

Value* act(Graph& g, const std::string& name) {
  Value* v = g.add_value(name);
  v->dtype = quant::DType::Float32;
  return v;
}

// x[1,4,5,5] -> Conv1 (6 out, 1x1) -> y1 -> [between] -> r -> Conv2 (3 out, 3x3, pad 1, `group2`) -> y.
// Output channel c of Conv1 is scaled by range1[c] (so ranges 100:1 are possible).
void build_pair(Graph& g, std::mt19937& rng, const std::string& between, const std::vector<float>& range1, int64_t group2 = 1) {
  g.opset_imports[""] = 13;
  Value* x = act(g, "x");
  g.inputs = {x};
  const int64_t c1 = static_cast<int64_t>(range1.size());
  Tensor w1 = random_tensor({c1, 4, 1, 1}, rng, -1, 1);
  for (int64_t c = 0; c < c1; ++c)
    for (int64_t k = 0; k < 4; ++k) w1.data<float>()[c * 4 + k] *= range1[static_cast<size_t>(c)];
  Value* y1 = act(g, "y1");
  g.add_node("Conv", {x, quant::passes::add_constant(g, "w1", std::move(w1)),
                      quant::passes::add_constant(g, "b1", random_tensor({c1}, rng, -1, 1))},
             {y1}, "conv1");
  Value* r = y1;
  if (!between.empty()) {
    r = act(g, "r");
    std::vector<Value*> ins{y1};
    if (between == "Clip") {
      ins.push_back(quant::passes::add_constant(g, "lo", Tensor::from_vector<float>({}, {0})));
      ins.push_back(quant::passes::add_constant(g, "hi", Tensor::from_vector<float>({}, {6})));
    }
    g.add_node(between, ins, {r}, "act");
  }
  const int64_t out2 = group2 == 1 ? 3 : c1;
  Value* y = act(g, "y");
  auto* conv2 = g.add_node("Conv", {r, quant::passes::add_constant(g, "w2", random_tensor({out2, c1 / group2, 3, 3}, rng, -1, 1)),
                                     quant::passes::add_constant(g, "b2", random_tensor({out2}, rng, -1, 1))},
                           {y}, "conv2");
  conv2->attributes["pads"] = quant::ir::Attribute::of_ints({1, 1, 1, 1});
  conv2->attributes["group"] = quant::ir::Attribute::of_int(group2);
  g.outputs = {y};
}

// max |w| of output channel c (dim 0) / input channel c of a Conv weight [O, I/group, k...].
double out_range(const Tensor& w, int64_t c) {
  const int64_t inner = w.size() / w.dim(0);
  double r = 0;
  for (int64_t k = 0; k < inner; ++k) r = std::max(r, static_cast<double>(std::abs(w.data<float>()[c * inner + k])));
  return r;
}
double in_range(const Tensor& w, int64_t c, int64_t group) {
  const int64_t cin = w.dim(1), cout = w.dim(0) / group, taps = w.size() / (w.dim(0) * cin);
  const int64_t g = c / cin, j = c % cin;
  double r = 0;
  for (int64_t o = g * cout; o < (g + 1) * cout; ++o)
    for (int64_t t = 0; t < taps; ++t) r = std::max(r, static_cast<double>(std::abs(w.data<float>()[(o * cin + j) * taps + t])));
  return r;
}

void check_same_outputs(const Graph& a, const Graph& b, std::mt19937& rng) {
  for (int s = 0; s < 3; ++s) {
    Tensor x = random_tensor({1, 4, 5, 5}, rng, -2, 2);
    Tensor ya = run_graph(a, {x})[0], yb = run_graph(b, {x})[0];
    REQUIRE(ya.size() == yb.size());
    for (int64_t i = 0; i < ya.size(); ++i) CHECK(yb.data<float>()[i] == Approx(ya.data<float>()[i]).margin(1e-5).epsilon(1e-5));
  }
}

const Tensor& weight(const Graph& g, const char* name) { return *g.find_value(name)->constant; }

}  // namespace

TEST_CASE("equalize makes the ranges of a Conv -> Relu -> Conv pair equal per channel, output unchanged", "[passes][equalize]") {
  std::mt19937 rng(7);
  Graph ref, g;
  const std::vector<float> ranges = {100, 1, 10, 0.5f, 30, 2};
  std::mt19937 r1(3), r2(3);
  build_pair(ref, r1, "Relu", ranges);
  build_pair(g, r2, "Relu", ranges);
  // Before: output channel ranges 100:1 apart.
  CHECK(out_range(weight(g, "w1"), 0) / out_range(weight(g, "w1"), 1) > 20);
  auto report = quant::passes::equalize(g);
  REQUIRE(report.has_value());
  REQUIRE(report->pairs.size() == 1);
  CHECK(report->pairs[0].first == "conv1");
  CHECK(report->pairs[0].second == "conv2");
  CHECK(report->pairs[0].between == "Relu");
  CHECK(report->converged);
  CHECK(report->changed_tensors == std::set<std::string>{"y1", "r"});
  for (int64_t c = 0; c < 6; ++c) {
    // r1_i = r2_i = sqrt(r1_i r2_i) of the original weights.
    const double a = out_range(weight(g, "w1"), c), b = in_range(weight(g, "w2"), c, 1);
    CHECK(a == Approx(b).epsilon(1e-6));
    const double before = std::sqrt(out_range(weight(ref, "w1"), c) * in_range(weight(ref, "w2"), c, 1));
    CHECK(a == Approx(before).epsilon(1e-6));
  }
  check_same_outputs(ref, g, rng);
}

TEST_CASE("equalize: identity and depthwise pairs, iterated over a conv -> depthwise -> conv chain", "[passes][equalize]") {
  std::mt19937 rng(11);
  SECTION("conv -> depthwise (no activation)") {
    Graph ref, g;
    std::mt19937 r1(5), r2(5);
    build_pair(ref, r1, "", {50, 1, 3, 0.2f, 8, 1}, 6);
    build_pair(g, r2, "", {50, 1, 3, 0.2f, 8, 1}, 6);
    auto report = quant::passes::equalize(g);
    REQUIRE(report.has_value());
    REQUIRE(report->pairs.size() == 1);
    CHECK(report->pairs[0].between.empty());
    for (int64_t c = 0; c < 6; ++c) CHECK(out_range(weight(g, "w1"), c) == Approx(in_range(weight(g, "w2"), c, 6)).epsilon(1e-6));
    check_same_outputs(ref, g, rng);
  }
  SECTION("conv -> Relu -> depthwise -> Relu -> conv: both pairs, converged") {
    auto chain = [](Graph& g, std::mt19937& r) {
      build_pair(g, r, "Relu", {50, 1, 3, 0.2f, 8, 1}, 6);
      // y (depthwise output) -> Relu -> Conv3 (2 out, 1x1) -> z
      Value* y = g.find_value("y");
      Value* ry = act(g, "ry");
      g.add_node("Relu", {y}, {ry}, "act2");
      Tensor w3 = random_tensor({2, 6, 1, 1}, r, -1, 1);
      for (int k = 0; k < 2; ++k) w3.data<float>()[k * 6 + 2] *= 40;  // input channel 2 wide
      Value* z = act(g, "z");
      g.add_node("Conv", {ry, quant::passes::add_constant(g, "w3", std::move(w3))}, {z}, "conv3");
      g.outputs = {z};
    };
    Graph ref, g;
    std::mt19937 r1(9), r2(9);
    chain(ref, r1);
    chain(g, r2);
    auto report = quant::passes::equalize(g);
    REQUIRE(report.has_value());
    REQUIRE(report->pairs.size() == 2);
    CHECK(report->converged);
    CHECK(report->iterations > 1);
    // At the fixed point both pairs are equalized at once.
    const Tensor& w2 = weight(g, "w2");
    const Tensor& w3 = weight(g, "w3");
    for (int64_t c = 0; c < 6; ++c) {
      CHECK(out_range(weight(g, "w1"), c) == Approx(in_range(w2, c, 6)).epsilon(1e-4));
      CHECK(out_range(w2, c) == Approx(in_range(w3, c, 1)).epsilon(1e-4));
    }
    check_same_outputs(ref, g, rng);
  }
}

TEST_CASE("equalize skips a pair through Clip(0, 6) unless asked to make it a Relu", "[passes][equalize]") {
  std::mt19937 rng(13);
  Graph ref, g;
  std::mt19937 r1(2), r2(2);
  build_pair(ref, r1, "Clip", {100, 1, 1, 1, 1, 1});
  build_pair(g, r2, "Clip", {100, 1, 1, 1, 1, 1});
  auto skipped = quant::passes::equalize(g);
  REQUIRE(skipped.has_value());
  CHECK(skipped->pairs.empty());
  REQUIRE(skipped->notes.size() == 1);
  CHECK_THAT(skipped->notes[0], Catch::Contains("upper bound"));
  CHECK(weight(g, "w1").data<float>()[0] == weight(ref, "w1").data<float>()[0]);

  quant::passes::EqualizeOptions o;
  o.relu6_to_relu = true;
  auto replaced = quant::passes::equalize(g, o);
  REQUIRE(replaced.has_value());
  REQUIRE(replaced->pairs.size() == 1);
  CHECK(replaced->pairs[0].between == "Clip");  // as found; then replaced
  CHECK(replaced->replaced_clips == std::vector<std::string>{"act"});
  const quant::ir::Node* clip = g.find_value("r")->producer;
  CHECK(clip->op_type == "Relu");
  CHECK(clip->inputs.size() == 1);
  for (int64_t c = 0; c < 6; ++c) CHECK(out_range(weight(g, "w1"), c) == Approx(in_range(weight(g, "w2"), c, 1)).epsilon(1e-6));
}

TEST_CASE("equalize: Gemm -> Relu -> Gemm with either weight layout", "[passes][equalize]") {
  for (int trans : {0, 1}) {
    auto build = [trans](Graph& g, std::mt19937& rng) {
      g.opset_imports[""] = 13;
      Value* x = act(g, "x");
      g.inputs = {x};
      // W1 [K=3, N=4] (or [4, 3] with transB); column n scaled by 10^n.
      Tensor w1 = random_tensor(trans ? quant::Dims{4, 3} : quant::Dims{3, 4}, rng, -1, 1);
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t k = 0; k < 3; ++k) w1.data<float>()[trans ? n * 3 + k : k * 4 + n] *= std::pow(10.0f, static_cast<float>(n) - 1);
      Value *h = act(g, "h"), *r = act(g, "r"), *y = act(g, "y");
      auto* g1 = g.add_node("Gemm", {x, quant::passes::add_constant(g, "w1", std::move(w1)),
                                     quant::passes::add_constant(g, "b1", random_tensor({4}, rng, -1, 1))},
                            {h}, "gemm1");
      g.add_node("Relu", {h}, {r}, "relu");
      auto* g2 = g.add_node("Gemm", {r, quant::passes::add_constant(g, "w2", random_tensor(trans ? quant::Dims{2, 4} : quant::Dims{4, 2}, rng, -1, 1))},
                            {y}, "gemm2");
      g1->attributes["transB"] = quant::ir::Attribute::of_int(trans);
      g2->attributes["transB"] = quant::ir::Attribute::of_int(trans);
      g.outputs = {y};
    };
    Graph ref, g;
    std::mt19937 r1(4), r2(4), rng(8);
    build(ref, r1);
    build(g, r2);
    auto report = quant::passes::equalize(g);
    REQUIRE(report.has_value());
    REQUIRE(report->pairs.size() == 1);
    const Tensor& w1 = weight(g, "w1");
    const Tensor& w2 = weight(g, "w2");
    for (int64_t n = 0; n < 4; ++n) {
      double a = 0, b = 0;
      for (int64_t k = 0; k < 3; ++k) a = std::max(a, static_cast<double>(std::abs(w1.data<float>()[trans ? n * 3 + k : k * 4 + n])));
      for (int64_t o = 0; o < 2; ++o) b = std::max(b, static_cast<double>(std::abs(w2.data<float>()[trans ? o * 4 + n : n * 2 + o])));
      CHECK(a == Approx(b).epsilon(1e-6));
    }
    Tensor x = random_tensor({5, 3}, rng, -2, 2);
    Tensor ya = run_graph(ref, {x})[0], yb = run_graph(g, {x})[0];
    for (int64_t i = 0; i < ya.size(); ++i) CHECK(yb.data<float>()[i] == Approx(ya.data<float>()[i]).margin(1e-5).epsilon(1e-5));
  }
}

TEST_CASE("equalize leaves a layer whose output has two readers", "[passes][equalize]") {
  std::mt19937 r(1);
  Graph g;
  build_pair(g, r, "Relu", {100, 1, 1, 1, 1, 1});
  Value* extra = act(g, "extra");
  g.add_node("Relu", {g.find_value("y1")}, {extra}, "second_reader");
  g.outputs.push_back(extra);
  const float before = weight(g, "w1").data<float>()[0];
  auto report = quant::passes::equalize(g);
  REQUIRE(report.has_value());
  CHECK(report->pairs.empty());
  CHECK(weight(g, "w1").data<float>()[0] == before);
}
