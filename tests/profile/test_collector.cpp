// profile::Collector with Relu/Clip outputs binned from their inputs against
// every activation scanned on its own: the same histograms, to the bit.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/collector.h"

using namespace quant;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct Model {
  ir::Graph g;
  ir::Value *x, *s, *r1, *r2, *t, *c6, *u, *cfree, *v, *cdyn;
};

// s = x + b -> r1 = Relu(s) -> r2 = Relu(r1) (a chain); t = x * b -> c6 =
// Clip(t, 0, 6) (constant inputs, or attributes before opset 11); u = x - b ->
// cfree = Clip(u) (no bounds); v = x / b -> cdyn = Clip(v, lo) whose bound is
// a graph input, not a constant.
void build(Model& m, int64_t opset) {
  m.g.opset_imports[""] = opset;
  auto input = [&](const char* name) {
    ir::Value* val = m.g.add_value(name);
    val->dtype = DType::Float32;
    m.g.inputs.push_back(val);
    return val;
  };
  auto constant = [&](const char* name, float f) {
    ir::Value* c = m.g.add_value(name);
    c->dtype = DType::Float32;
    c->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({}, {f}));
    return c;
  };
  m.x = input("x");
  ir::Value* b = input("b");
  ir::Value* lo = input("lo");
  for (auto [p, name] : {std::pair{&m.s, "s"}, {&m.r1, "r1"}, {&m.r2, "r2"}, {&m.t, "t"}, {&m.c6, "c6"}, {&m.u, "u"},
                         {&m.cfree, "cfree"}, {&m.v, "v"}, {&m.cdyn, "cdyn"}})
    *p = m.g.add_value(name);
  m.g.add_node("Add", {m.x, b}, {m.s}, "add");
  m.g.add_node("Relu", {m.s}, {m.r1}, "relu1");
  m.g.add_node("Relu", {m.r1}, {m.r2}, "relu2");
  m.g.add_node("Mul", {m.x, b}, {m.t}, "mul");
  if (opset >= 11) {
    m.g.add_node("Clip", {m.t, constant("zero", 0.0f), constant("six", 6.0f)}, {m.c6}, "clip6");
  } else {
    ir::Node* c6 = m.g.add_node("Clip", {m.t}, {m.c6}, "clip6");
    c6->attributes["min"] = ir::Attribute::of_float(0.0f);
    c6->attributes["max"] = ir::Attribute::of_float(6.0f);
  }
  m.g.add_node("Sub", {m.x, b}, {m.u}, "sub");
  m.g.add_node("Clip", {m.u}, {m.cfree}, "clip_free");
  m.g.add_node("Div", {m.x, b}, {m.v}, "div");
  if (opset >= 11) m.g.add_node("Clip", {m.v, lo}, {m.cdyn}, "clip_dynamic");
  else m.g.add_node("Relu", {m.x}, {m.cdyn}, "relu_x");
  m.g.outputs = {m.r2, m.c6, m.cfree, m.cdyn};
}

}  // namespace

TEST_CASE("clamped twins: Relu and Clip outputs with constant bounds", "[profile][collector]") {
  for (int64_t opset : {10, 13}) {
    Model m;
    build(m, opset);
    const auto twins = profile::find_clamped_twins(m.g);
    INFO("opset " << opset);
    REQUIRE(twins.count(m.s));
    CHECK(twins.at(m.s).y == m.r1);
    CHECK(twins.at(m.s).lo == 0.0f);
    CHECK(twins.at(m.s).hi == std::numeric_limits<float>::infinity());
    REQUIRE(twins.count(m.r1));
    CHECK(twins.at(m.r1).y == m.r2);
    REQUIRE(twins.count(m.t));
    CHECK(twins.at(m.t).lo == 0.0f);
    CHECK(twins.at(m.t).hi == 6.0f);
    REQUIRE(twins.count(m.u));
    CHECK(twins.at(m.u).lo == std::numeric_limits<float>::lowest());
    CHECK(twins.at(m.u).hi == std::numeric_limits<float>::max());
    CHECK_FALSE(twins.count(m.v));  // a bound that is not a constant
    CHECK(twins.count(m.x) == (opset < 11 ? 1u : 0u));
  }
}

TEST_CASE("collector: Relu/Clip outputs filled from their inputs give the histograms of separate scans", "[profile][collector]") {
  std::mt19937 rng(41);
  for (int64_t opset : {10, 13}) {
    Model m;
    build(m, opset);
    auto session = interp::Session::create(m.g);
    REQUIRE(session.has_value());
    profile::Collector paired(m.g, 2048), separate(m.g, 2048, /*pair_clamped=*/false);
    // Scales that make later samples widen the lattices, then one with a NaN.
    for (float scale : {1.0f, 4.0f, 0.25f, 9.0f, 2.0f, -1.0f}) {
      std::normal_distribution<float> normal(0.0f, scale > 0 ? scale : 1.0f);
      std::vector<float> xs(3 * 1000 + 7);
      for (float& f : xs) f = normal(rng);
      if (scale < 0) xs[17] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<Tensor> feeds = {Tensor::from_vector<float>({3, 1007}, xs),
                                         Tensor::from_vector<float>({1007}, std::vector<float>(1007, 0.75f)),
                                         Tensor::from_vector<float>({}, {-0.5f})};
      for (profile::Collector* c : {&paired, &separate}) {
        auto out = (*session)->run(feeds, [&](const ir::Value& v, const Tensor& t) { c->observe(v, t); });
        INFO(out.status().message());
        REQUIRE(out.has_value());
      }
    }
    REQUIRE(paired.tensors().size() == separate.tensors().size());
    for (const auto& [name, want] : separate.tensors()) {
      INFO("opset " << opset << " tensor " << name);
      REQUIRE(paired.tensors().count(name));
      const profile::TensorProfile& got = paired.tensors().at(name);
      CHECK(got.shape == want.shape);
      CHECK(got.hist.counts() == want.hist.counts());
      CHECK(same_bits(got.hist.lo(), want.hist.lo()));
      CHECK(same_bits(got.hist.hi(), want.hist.hi()));
      CHECK(same_bits(got.hist.min(), want.hist.min()));
      CHECK(same_bits(got.hist.max(), want.hist.max()));
      CHECK(same_bits(got.hist.sum(), want.hist.sum()));
      CHECK(got.hist.count() == want.hist.count());
      CHECK(got.hist.nan_count() == want.hist.nan_count());
      CHECK(got.hist.inf_count() == want.hist.inf_count());
    }
  }
}
