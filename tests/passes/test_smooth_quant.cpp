// passes/smooth_quant.h: the graph rewrite of SmoothQuant on a hand-built
// graph with one outlier channel: folded into a LayerNormalization, a Mul
// inserted where it cannot fold, weights scaled by the factors the formula
// gives, and the float model's output unchanged to 1e-5 relative.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/smooth_quant.h"
#include "libquant/profile/collector.h"

using namespace quant;

namespace {

constexpr int64_t kK = 8, kN = 4;

ir::Value* constant(ir::Graph& g, const std::string& name, Dims shape, std::vector<float> v) {
  ir::Value* c = g.add_value(name);
  c->dtype = DType::Float32;
  c->constant = std::make_unique<Tensor>(Tensor::from_vector<float>(std::move(shape), v));
  return c;
}

std::vector<float> random(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// x [3, 8] -> LayerNormalization(gamma: 50 on channel 2) -> ln -> MatMul(w1) -> y1
//                                                            -> Gemm(w2 [N, K], transB) -> y2
// x -> Relu -> r -> MatMul(w3) -> y3, and r is also a graph output (no fold: a Mul)
// x -> Gemm(transA) -> y4 (channel K is x's first axis: left alone)
// With `residual`, ln is also read by an Add (ln + x -> y5), as a post-norm block's residual reads it.
void build(ir::Graph& g, std::mt19937& rng, bool residual = false) {
  g.opset_imports[""] = 17;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::Float32;
  g.inputs.push_back(x);
  std::vector<float> gamma(kK, 1.0f);
  gamma[2] = 50;
  ir::Value* ln = g.add_value("ln");
  ir::Value* r = g.add_value("r");
  std::vector<ir::Value*> y;
  for (const char* name : {"y1", "y2", "y3", "y4"}) y.push_back(g.add_value(name));
  g.add_node("LayerNormalization",
             {x, constant(g, "gamma", {kK}, gamma), constant(g, "beta", {kK}, random(kK, rng, 0.1f))}, {ln}, "ln");
  g.add_node("MatMul", {ln, constant(g, "w1", {kK, kN}, random(kK * kN, rng, 0.3f))}, {y[0]}, "mm1");
  ir::Node* gemm = g.add_node("Gemm", {ln, constant(g, "w2", {kN, kK}, random(kK * kN, rng, 0.3f)),
                                       constant(g, "c2", {kN}, {1, 2, 3, 4})}, {y[1]}, "gemm2");
  gemm->attributes["transB"] = ir::Attribute::of_int(1);
  g.add_node("Relu", {x}, {r}, "relu");
  g.add_node("MatMul", {r, constant(g, "w3", {kK, kN}, random(kK * kN, rng, 0.3f))}, {y[2]}, "mm3");
  ir::Node* ta = g.add_node("Gemm", {x, constant(g, "w4", {3, kN}, random(3 * kN, rng, 0.3f))}, {y[3]}, "gemm_ta");
  ta->attributes["transA"] = ir::Attribute::of_int(1);
  g.outputs = {y[0], y[1], y[2], y[3], r};
  if (residual) {
    ir::Value* y5 = g.add_value("y5");
    g.add_node("Add", {ln, x}, {y5}, "residual");
    g.outputs.push_back(y5);
  }
}

std::vector<Tensor> inputs(std::mt19937& rng) {
  std::vector<float> v = random(3 * kK, rng, 1.0f);
  for (int64_t i = 0; i < 3; ++i) v[static_cast<size_t>(i * kK + 6)] *= 30;  // an outlier channel of x (and r)
  return {Tensor::from_vector<float>({3, kK}, v)};
}

std::vector<Tensor> run(const ir::Graph& g, const std::vector<Tensor>& in, profile::Collector* collector = nullptr) {
  auto session = interp::Session::create(g, {});
  REQUIRE(session.has_value());
  auto out = collector ? (*session)->run(in, [&](const ir::Value& v, const Tensor& t) { collector->observe(v, t); })
                       : (*session)->run(in);
  REQUIRE(out.has_value());
  return std::move(*out);
}

}  // namespace

TEST_CASE("smooth quant pass: folds into LayerNorm, inserts a Mul otherwise, keeps the float output",
          "[passes][smooth_quant]") {
  std::mt19937 rng(17);
  ir::Graph g;
  build(g, rng);
  std::vector<std::vector<Tensor>> data;
  for (int i = 0; i < 4; ++i) data.push_back(inputs(rng));
  profile::Profile prof;
  profile::Collector collector(g, 64);
  std::vector<std::vector<Tensor>> before;
  for (const auto& in : data) before.push_back(run(g, in, &collector));
  prof.tensors = collector.tensors();
  REQUIRE(prof.tensors.at("ln").channel_absmax.size() == kK);

  // The factors the formula gives, from the profile and both weights of ln's group.
  const std::vector<float> a = prof.tensors.at("ln").channel_absmax;
  const Tensor w1 = *g.find_value("w1")->constant, w2 = *g.find_value("w2")->constant, w3 = *g.find_value("w3")->constant;
  const Tensor gamma = *g.find_value("gamma")->constant, w4 = *g.find_value("w4")->constant;
  std::vector<float> s(kK);
  for (int64_t j = 0; j < kK; ++j) {
    double wmax = 0;
    for (int64_t n = 0; n < kN; ++n)
      wmax = std::max({wmax, std::fabs(double{w1.data<float>()[j * kN + n]}), std::fabs(double{w2.data<float>()[n * kK + j]})});
    s[static_cast<size_t>(j)] = static_cast<float>(std::sqrt(double{a[static_cast<size_t>(j)]}) / std::sqrt(wmax));
  }
  CHECK(s[2] > 3 * s[0]);  // the outlier channel takes the largest factor

  auto report = passes::smooth_quant(g, prof, {}, "p.json");
  REQUIRE(report.has_value());
  REQUIRE(report->layers.size() == 2);
  CHECK(report->layers[0].input == "ln");
  CHECK(report->layers[0].nodes == std::vector<std::string>{"mm1", "gemm2"});
  CHECK(report->layers[0].folded_into == "LayerNormalization 'ln'");
  CHECK(report->layers[1].input == "r");
  CHECK(report->layers[1].folded_into.empty());
  CHECK(report->float_nodes == std::set<std::string>{report->layers[1].mul});
  CHECK(report->changed_tensors.count("ln"));
  for (int64_t j = 0; j < kK; ++j) {
    const float sj = s[static_cast<size_t>(j)];
    CHECK(g.find_value("gamma")->constant->data<float>()[j] == Approx(gamma.data<float>()[j] / sj).epsilon(1e-6));
    for (int64_t n = 0; n < kN; ++n) {
      CHECK(g.find_value("w1")->constant->data<float>()[j * kN + n] == Approx(w1.data<float>()[j * kN + n] * sj).epsilon(1e-6));
      CHECK(g.find_value("w2")->constant->data<float>()[n * kK + j] == Approx(w2.data<float>()[n * kK + j] * sj).epsilon(1e-6));
    }
  }
  // r: a Mul by 1/s feeding mm3; r itself (a graph output) unchanged.
  const ir::Node* mm3 = nullptr;
  for (const auto& n : g.nodes()) if (n->name == "mm3") mm3 = n.get();
  REQUIRE(mm3);
  REQUIRE(mm3->input(0)->producer);
  CHECK(mm3->input(0)->producer->op_type == "Mul");
  CHECK(mm3->input(0)->producer->input(0)->name() == "r");
  CHECK(report->changed_tensors.count(mm3->input(0)->name()));
  // transA Gemm: its weight untouched.
  for (int64_t e = 0; e < w4.size(); ++e) CHECK(g.find_value("w4")->constant->data<float>()[e] == w4.data<float>()[e]);
  REQUIRE(ir::verify(g).is_ok());

  for (size_t i = 0; i < data.size(); ++i) {
    const auto after = run(g, data[i]);
    REQUIRE(after.size() == before[i].size());
    for (size_t o = 0; o < after.size(); ++o) {
      double err = 0, ref = 0;
      for (int64_t e = 0; e < after[o].size(); ++e) {
        const double d = double{after[o].data<float>()[e]} - before[i][o].data<float>()[e];
        err += d * d;
        ref += double{before[i][o].data<float>()[e]} * before[i][o].data<float>()[e];
      }
      INFO("output " << o << " sample " << i);
      CHECK(std::sqrt(err) <= 1e-5 * std::sqrt(ref));
    }
  }
}

TEST_CASE("smooth quant pass: a version 1 profile is refused; a missing absmax leaves the group", "[passes][smooth_quant]") {
  std::mt19937 rng(5);
  ir::Graph g;
  build(g, rng);
  profile::Profile old;
  old.version = 1;
  auto refused = passes::smooth_quant(g, old, {}, "old.json");
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.status().code() == StatusCode::kBadInput);
  CHECK(refused.status().message().rfind("old.json: profile version 1 has no per-channel absmax", 0) == 0);

  const float w1 = g.find_value("w1")->constant->data<float>()[0];
  profile::Profile empty;  // version 2, no tensors
  auto left = passes::smooth_quant(g, empty, {}, "p.json");
  REQUIRE(left.has_value());
  CHECK(left->layers.empty());
  CHECK(left->notes.size() == 2);
  CHECK(g.find_value("w1")->constant->data<float>()[0] == w1);
}

TEST_CASE("smooth quant pass: the row sampler keeps the first rows of each group input, up to its limit",
          "[passes][smooth_quant]") {
  std::mt19937 rng(9);
  ir::Graph g;
  build(g, rng);
  passes::RowSampler sampler(g, 5);
  const auto a = inputs(rng), b = inputs(rng);
  auto session = interp::Session::create(g, {});
  REQUIRE(session.has_value());
  auto observe = [&](const ir::Value& v, const Tensor& t) { sampler.observe(v, t); };
  REQUIRE((*session)->run(a, observe).has_value());
  REQUIRE((*session)->run(b, observe).has_value());
  // ln and r are group inputs (3 rows per run: 3 + 2 of the second); x only feeds a transA Gemm.
  REQUIRE(sampler.rows().size() == 2);
  const auto& r = sampler.rows().at("r");
  CHECK(r.k == kK);
  REQUIRE(r.rows() == 5);
  for (int64_t i = 0; i < 5 * kK; ++i) {
    const float x = i < 3 * kK ? a[0].data<float>()[i] : b[0].data<float>()[i - 3 * kK];
    CHECK(r.values[static_cast<size_t>(i)] == std::max(x, 0.0f));
  }
}

TEST_CASE("smooth quant pass: a LayerNorm also read by a residual Add folds; the Add reads X back from a float Mul",
          "[passes][smooth_quant]") {
  std::mt19937 rng(23);
  ir::Graph g;
  build(g, rng, true);
  std::vector<std::vector<Tensor>> data;
  for (int i = 0; i < 3; ++i) data.push_back(inputs(rng));
  profile::Profile prof;
  profile::Collector collector(g, 64);
  std::vector<std::vector<Tensor>> before;
  for (const auto& in : data) before.push_back(run(g, in, &collector));
  prof.tensors = collector.tensors();

  auto report = passes::smooth_quant(g, prof, {}, "p.json");
  REQUIRE(report.has_value());
  REQUIRE(report->layers.size() == 2);
  const auto& ln = report->layers[0];
  CHECK(ln.folded_into == "LayerNormalization 'ln'");
  REQUIRE_FALSE(ln.mul.empty());
  CHECK(report->float_nodes.count(ln.mul));
  const ir::Node* add = nullptr;
  for (const auto& n : g.nodes()) if (n->name == "residual") add = n.get();
  REQUIRE(add);
  REQUIRE(add->input(0)->producer);
  CHECK(add->input(0)->producer->name == ln.mul);
  CHECK(add->input(0)->producer->input(0)->name() == "ln");
  CHECK(report->changed_tensors.count(add->input(0)->name()));
  REQUIRE(ir::verify(g).is_ok());
  for (size_t i = 0; i < data.size(); ++i) {
    const auto after = run(g, data[i]);
    for (size_t o = 0; o < after.size(); ++o) {
      double err = 0, ref = 0;
      for (int64_t e = 0; e < after[o].size(); ++e) {
        const double d = double{after[o].data<float>()[e]} - before[i][o].data<float>()[e];
        err += d * d;
        ref += double{before[i][o].data<float>()[e]} * before[i][o].data<float>()[e];
      }
      INFO("output " << o << " sample " << i);
      CHECK(std::sqrt(err) <= 1e-5 * std::sqrt(ref));
    }
  }
}
