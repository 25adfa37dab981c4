// Concat without copies (PlanOptions::in_place): the memory plan has a
// channel Concat's inputs computed into their slices of its output, the
// Concat copies none of them, and no output bit changes, whether the model
// declares its shapes or the first run shows them, and when a later run's
// shapes differ from the plan's.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "tests/interp/plan_util.h"

using quant::DType;
using quant::Tensor;
using quant::interp::PlanOptions;
using quant::interp::Session;
using quant::ir::Attribute;
using quant::ir::Value;
using quant::testing::random_tensor;
using quant::testing::random_weight;
using quant::testing::run;
using quant::testing::same_bits;

namespace {

// The same graph planned with copies (in_place off) and with slices (the default).
struct TwoPlans {
  std::unique_ptr<Session> copies, slices;
  explicit TwoPlans(const quant::ir::Graph& g) {
    PlanOptions no_in_place;
    no_in_place.in_place = false;
    auto a = Session::create(g, {}, no_in_place);
    auto b = Session::create(g, {}, {});
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    copies = std::move(*a);
    slices = std::move(*b);
  }
  // Runs both on x: the same bits.
  void check(const Tensor& x) const {
    const auto want = run(*copies, x), got = run(*slices, x);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], want[i]));
  }
};

// x [1, 4, H, W]:
//   r1 = Relu(Conv3x3(x))          Relu in place over its Conv's output
//   c2 = Conv1x1(x)
//   cat = Concat(r1, c2, axis 1)   [1, 8, H, W]: channels, outer dims 1
//   rows = Concat(r1b, c2b, axis 2) [1, 4, 2H, W]: 4 chunks per input (no slices)
//   y = Conv1x1(cat) + Conv1x1 of rows' channels, the graph outputs
// With typed = false only x is declared, of any height and width; the
// first run shows the shapes.
struct ConcatModel {
  quant::ir::Graph g;
  bool typed;
  int64_t h, w;

  Value* value(const std::string& name, quant::Dims shape) {
    Value* v = g.add_value(name);
    if (!typed && name != "x") return v;
    v->dtype = DType::Float32;
    v->has_shape = true;
    v->shape = std::move(shape);
    return v;
  }
  Value* weight(const std::string& name, quant::Dims shape, uint32_t seed) { return random_weight(g, name, std::move(shape), seed); }
  Value* conv(const std::string& name, Value* in, int64_t cin, int64_t cout, int64_t k, uint32_t seed) {
    Value* out = value(name, {1, cout, h, w});
    auto* n = g.add_node("Conv", {in, weight(name + "_w", {cout, cin, k, k}, seed), weight(name + "_b", {cout}, seed + 1)},
                         {out}, name + "_node");
    n->attributes["pads"] = Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
    return out;
  }
  Value* concat(const std::string& name, std::vector<Value*> ins, int64_t axis, quant::Dims shape) {
    Value* out = value(name, std::move(shape));
    auto* n = g.add_node("Concat", std::move(ins), {out}, name + "_node");
    n->attributes["axis"] = Attribute::of_int(axis);
    return out;
  }

  // 4 x 6 x 6 floats: 576 bytes a slice, a multiple of 64.
  explicit ConcatModel(bool typed_values, int64_t height = 6, int64_t width = 6)
      : typed(typed_values), h(height), w(width) {
    g.opset_imports[""] = 13;
    Value* x = value("x", typed ? quant::Dims{1, 4, h, w} : quant::Dims{1, 4, -1, -1});
    g.inputs.push_back(x);
    Value* r1 = value("r1", {1, 4, h, w});
    g.add_node("Relu", {conv("c1", x, 4, 4, 3, 10)}, {r1}, "r1_node");
    Value* cat = concat("cat", {r1, conv("c2", x, 4, 4, 1, 20)}, 1, {1, 8, h, w});
    Value* rows = concat("rows", {conv("c3", x, 4, 4, 3, 30), conv("c4", x, 4, 4, 1, 40)}, 2, {1, 4, 2 * h, w});
    g.outputs = {conv("y", cat, 8, 4, 1, 50), conv("z", rows, 4, 4, 1, 60)};
  }
};

}  // namespace

TEST_CASE("a channel Concat's inputs are computed into their slices of its output", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
    INFO("typed " << typed);
    ConcatModel m(typed);
    const TwoPlans plans(m.g);
    // Three runs: an untyped model's first learns the shapes, the next ones use the slices.
    for (uint32_t seed : {1u, 2u, 3u}) plans.check(random_tensor({1, 4, 6, 6}, seed));
    std::map<std::string, Session::PlannedValue> plan;
    for (const auto& p : plans.slices->memory_plan()) plan.emplace(p.value->name(), p);
    // c1 and r1 (written over it) fill cat's first slice, c2 its second.
    REQUIRE(plan.count("cat") == 1);
    const int buffer = plan.at("cat").buffer;
    for (const char* name : {"c1", "r1", "c2"}) CHECK(plan.at(name).buffer == buffer);
    CHECK(plan.at("c1").offset == 0);
    CHECK(plan.at("r1").offset == 0);
    CHECK(plan.at("c2").offset == 4 * 6 * 6 * 4);
    CHECK(plan.at("c2").bytes == 4 * 6 * 6 * 4);
    // The rows Concat's inputs are four chunks each: no slices, buffers of their own.
    CHECK(plan.at("c3").offset == 0);
    CHECK(plan.at("c4").offset == 0);
    CHECK(plan.at("c3").buffer != plan.at("rows").buffer);
    CHECK(plan.at("c4").buffer != plan.at("rows").buffer);
    // Values sharing a buffer at one step hold disjoint bytes.
    const auto planned = plans.slices->memory_plan();
    for (size_t i = 0; i < planned.size(); ++i)
      for (size_t j = i + 1; j < planned.size(); ++j) {
        const auto &a = planned[i], &b = planned[j];
        if (a.buffer != b.buffer || a.last < b.first || b.last < a.first) continue;
        if (a.takes_over == b.value || b.takes_over == a.value) continue;  // written in place
        INFO(a.value->name() << " and " << b.value->name());
        const bool disjoint = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
        // The Concat's output and its inputs meet at its step only, the inputs in their slices.
        const bool concat_pair = (a.value->name() == "cat" || b.value->name() == "cat") && (a.first == b.last || b.first == a.last);
        CHECK((disjoint || concat_pair));
      }
    // Without in-place planning there are no slices.
    for (const auto& p : plans.copies->memory_plan()) CHECK(p.offset == 0);
  }
}

TEST_CASE("a Concat planned in slices stays exact when a run's shapes differ from the plan's", "[interp][memory_plan]") {
  // Untyped: the plan comes from the first run's shapes (6 x 6); later runs
  // are larger (the inputs outgrow their slices and get bytes of their own)
  // or smaller (they lie in their slices, but not where this run's Concat
  // puts them: it must not write over them before they are read).
  ConcatModel m(false);
  const TwoPlans plans(m.g);
  uint32_t seed = 7;
  // 5 x 6: c2 lies at 576 bytes, inside this run's output (960 bytes) where
  // its slice is at 480: copied there (ranges overlapping), never skipped.
  for (quant::Dims shape : {quant::Dims{1, 4, 6, 6}, quant::Dims{1, 4, 6, 6}, quant::Dims{1, 4, 7, 6},
                            quant::Dims{1, 4, 4, 4}, quant::Dims{1, 4, 5, 6}, quant::Dims{1, 4, 6, 6},
                            quant::Dims{1, 4, 8, 9}}) {
    INFO("x " << quant::dims_to_string(shape));
    plans.check(random_tensor(shape, seed++));
  }
}

TEST_CASE("QLinearConcat's inputs are quantized into their slices, the rescaled one in place", "[interp][memory_plan]") {
  // x [1, 4, 4, 4] float -> a = QuantizeLinear(x, 0.1, 10), b = QuantizeLinear(Relu(x), 0.3, 0):
  // QLinearConcat(y 0.1 / 10; a 0.1 / 10 copied, b 0.3 / 0 through a table), then back to float.
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  g.opset_imports["com.microsoft"] = 1;
  const auto scalar = [&](const std::string& name, auto v) {
    Value* c = g.add_value(name);
    c->constant = std::make_unique<Tensor>(Tensor::scalar(v));
    c->dtype = c->constant->dtype();
    return c;
  };
  Value* x = g.add_value("x");
  x->dtype = DType::Float32;
  x->has_shape = true;
  x->shape = {1, 4, 4, 4};
  g.inputs.push_back(x);
  Value* s1 = scalar("s1", 0.1f);
  Value* z1 = scalar("z1", uint8_t{10});
  Value* s3 = scalar("s3", 0.3f);
  Value* z0 = scalar("z0", uint8_t{0});
  Value *a = g.add_value("a"), *r = g.add_value("r"), *b = g.add_value("b"), *cat = g.add_value("cat"), *y = g.add_value("y");
  g.add_node("QuantizeLinear", {x, s1, z1}, {a}, "qa");
  g.add_node("Relu", {x}, {r}, "relu");
  g.add_node("QuantizeLinear", {r, s3, z0}, {b}, "qb");
  auto* n = g.add_node("QLinearConcat", {s1, z1, a, s1, z1, b, s3, z0}, {cat}, "cat_node");
  n->domain = "com.microsoft";
  n->attributes["axis"] = Attribute::of_int(1);
  g.add_node("DequantizeLinear", {cat, s1, z1}, {y}, "dq");
  g.outputs = {y};
  const TwoPlans plans(g);
  for (uint32_t seed : {4u, 5u, 6u}) plans.check(random_tensor({1, 4, 4, 4}, seed));
  std::map<std::string, Session::PlannedValue> plan;
  for (const auto& p : plans.slices->memory_plan()) plan.emplace(p.value->name(), p);
  CHECK(plan.at("a").buffer == plan.at("cat").buffer);
  CHECK(plan.at("b").buffer == plan.at("cat").buffer);
  CHECK(plan.at("a").offset == 0);
  CHECK(plan.at("b").offset == 64);
}

TEST_CASE("Tensor::view from an offset, limited", "[interp][memory_plan]") {
  Tensor t(DType::UInt8, {128});  // a multiple of 64: capacity() is the size
  REQUIRE(t.capacity() == 128);
  Tensor whole = t.view();
  CHECK(whole.capacity() == 128);
  CHECK(whole.raw() == t.raw());
  Tensor tail = t.view(40);
  CHECK(tail.capacity() == 88);
  CHECK(static_cast<const std::byte*>(tail.raw()) == static_cast<const std::byte*>(t.raw()) + 40);
  CHECK(t.view(40, 16).capacity() == 16);  // a slice's bytes only
  CHECK(t.view(120, 16).capacity() == 8);  // never past the end
  CHECK(t.view(128).capacity() == 0);      // nothing left
  CHECK_FALSE(t.view(40, 16).owns_bytes());
}
