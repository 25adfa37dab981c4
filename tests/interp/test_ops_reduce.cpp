// Reduce*, ArgMax/ArgMin, CumSum and TopK through one-node graphs against
// hand-computed values, in the opset forms the spec defines.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::f32;
using quant::testing::i32;
using quant::testing::i64;
using quant::testing::run_one;
using quant::testing::values_of;

namespace {

// x = [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

NodeSpec reduce_attr(const std::string& op, Tensor x, std::vector<int64_t> axes, int64_t keepdims) {
  NodeSpec s{op, 13, {std::move(x)}};
  if (!axes.empty()) s.attributes["axes"] = Attribute::of_ints(axes);
  s.attributes["keepdims"] = Attribute::of_int(keepdims);
  return s;
}

}  // namespace

TEST_CASE("Every Reduce op over axis 1 (axes attribute, opset 13)", "[interp][reduce]") {
  struct Case {
    const char* op;
    std::vector<float> want;
  };
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double lse1 = std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0));
  const std::vector<Case> cases = {
      {"ReduceMean", {2, 5}},
      {"ReduceMax", {3, 6}},
      {"ReduceMin", {1, 4}},
      {"ReduceProd", {6, 120}},
      {"ReduceL1", {6, 15}},
      {"ReduceL2", {std::sqrt(14.0f), std::sqrt(77.0f)}},
      {"ReduceLogSum", {std::log(6.0f), std::log(15.0f)}},
      {"ReduceLogSumExp", {static_cast<float>(lse0), static_cast<float>(lse1)}},
      {"ReduceSumSquare", {14, 77}},
  };
  for (const Case& c : cases) {
    INFO(c.op);
    Tensor y = run_one(reduce_attr(c.op, x23(), {1}, 1));
    CHECK(y.shape() == Dims{2, 1});
    auto v = values_of<float>(y);
    REQUIRE(v.size() == 2);
    CHECK(v[0] == Approx(c.want[0]));
    CHECK(v[1] == Approx(c.want[1]));
  }
}

TEST_CASE("Reduce keepdims, negative axes and default all-axes", "[interp][reduce]") {
  Tensor y = run_one(reduce_attr("ReduceMax", x23(), {-2}, 0));
  CHECK(y.shape() == Dims{3});
  CHECK(values_of<float>(y) == std::vector<float>{4, 5, 6});
  // No axes: all axes; keepdims leaves [1, 1].
  Tensor all = run_one(reduce_attr("ReduceMin", x23(), {}, 1));
  CHECK(all.shape() == Dims{1, 1});
  CHECK(values_of<float>(all) == std::vector<float>{1});
  // Reducing a middle axis of a 3-D tensor keeps the order of the others.
  Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor mid = run_one(reduce_attr("ReduceMean", x, {1}, 0));
  CHECK(mid.shape() == Dims{2, 2});
  CHECK(values_of<float>(mid) == std::vector<float>{2, 3, 6, 7});
  Tensor outer = run_one(reduce_attr("ReduceMean", x, {0, 2}, 1));
  CHECK(outer.shape() == Dims{1, 2, 1});
  CHECK(values_of<float>(outer) == std::vector<float>{(1 + 2 + 5 + 6) / 4.0f, (3 + 4 + 7 + 8) / 4.0f});
}

TEST_CASE("ReduceSum takes axes as an input from opset 13, with noop_with_empty_axes", "[interp][reduce]") {
  auto attr13 = run_node(reduce_attr("ReduceSum", x23(), {1}, 1));
  REQUIRE_FALSE(attr13.has_value());
  CHECK_THAT(attr13.status().message(), Catch::Contains("takes axes as an input"));
  NodeSpec s{"ReduceSum", 13, {x23(), i64({1}, {0})}};
  s.attributes["keepdims"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{5, 7, 9});
  // Missing axes input: reduce everything.
  NodeSpec all{"ReduceSum", 13, {x23()}};
  CHECK(values_of<float>(run_one(all)) == std::vector<float>{21});
  // Empty axes with noop_with_empty_axes=1: identity.
  NodeSpec noop{"ReduceSum", 13, {x23(), i64({0}, {})}};
  noop.attributes["noop_with_empty_axes"] = Attribute::of_int(1);
  Tensor y = run_one(noop);
  CHECK(y.shape() == Dims{2, 3});
  CHECK(values_of<float>(y) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // Opset 11 still reads the attribute.
  NodeSpec old{"ReduceSum", 11, {x23()}};
  old.attributes["axes"] = Attribute::of_ints({1});
  CHECK(values_of<float>(run_one(old)) == std::vector<float>{6, 15});
  // ReduceMean-18 reads axes from the input like ReduceSum-13.
  NodeSpec mean18{"ReduceMean", 18, {x23(), i64({1}, {1})}};
  mean18.attributes["keepdims"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_one(mean18)) == std::vector<float>{2, 5});
}

TEST_CASE("Reduce on integer and double tensors keeps the element type", "[interp][reduce]") {
  NodeSpec s = reduce_attr("ReduceSum", i32({2, 2}, {1, 2, 3, 4}), {0}, 0);
  s.opset = 11;
  Tensor y = run_one(s);
  CHECK(y.dtype() == DType::Int32);
  CHECK(values_of<int32_t>(y) == std::vector<int32_t>{4, 6});
  Tensor mean = run_one(reduce_attr("ReduceMean", i64({3}, {1, 2, 4}), {}, 0));
  CHECK(values_of<int64_t>(mean) == std::vector<int64_t>{2});  // 7 / 3 truncated
  Tensor d = run_one(reduce_attr("ReduceProd", Tensor::from_vector<double>({3}, {0.5, 4, 3}), {}, 0));
  CHECK(values_of<double>(d) == std::vector<double>{6});
}

TEST_CASE("Reduce over an empty axis gives the identity; bad axes are refused", "[interp][reduce]") {
  Tensor empty = f32({2, 0}, {});
  CHECK(values_of<float>(run_one(reduce_attr("ReduceL1", empty, {1}, 0))) == std::vector<float>{0, 0});
  CHECK(values_of<float>(run_one(reduce_attr("ReduceProd", empty, {1}, 0))) == std::vector<float>{1, 1});
  CHECK(std::isinf(values_of<float>(run_one(reduce_attr("ReduceMax", empty, {1}, 0)))[0]));
  auto bad = run_node(reduce_attr("ReduceMax", x23(), {2}, 0));
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("axis 2 is out of range"));
  auto twice = run_node(reduce_attr("ReduceMax", x23(), {1, -1}, 0));
  REQUIRE_FALSE(twice.has_value());
  CHECK_THAT(twice.status().message(), Catch::Contains("repeat"));
}

TEST_CASE("ReduceLogSumExp does not overflow on large inputs", "[interp][reduce]") {
  Tensor y = run_one(reduce_attr("ReduceLogSumExp", f32({2}, {1000, 1000}), {}, 0));
  CHECK(values_of<float>(y)[0] == Approx(1000 + std::log(2.0f)));
}

TEST_CASE("ArgMax and ArgMin with keepdims and select_last_index", "[interp][reduce]") {
  Tensor x = f32({2, 3}, {1, 3, 3, 2, 0, 0});
  NodeSpec s{"ArgMax", 13, {x}};
  s.attributes["axis"] = Attribute::of_int(1);
  Tensor y = run_one(s);
  CHECK(y.dtype() == DType::Int64);
  CHECK(y.shape() == Dims{2, 1});
  CHECK(values_of<int64_t>(y) == std::vector<int64_t>{1, 0});
  s.attributes["select_last_index"] = Attribute::of_int(1);
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{2, 0});
  NodeSpec m{"ArgMin", 13, {x}};
  m.attributes["keepdims"] = Attribute::of_int(0);  // axis 0 by default
  Tensor ym = run_one(m);
  CHECK(ym.shape() == Dims{3});
  CHECK(values_of<int64_t>(ym) == std::vector<int64_t>{0, 1, 1});
  m.attributes["axis"] = Attribute::of_int(-1);
  m.attributes["select_last_index"] = Attribute::of_int(1);
  CHECK(values_of<int64_t>(run_one(m)) == std::vector<int64_t>{0, 2});
}

TEST_CASE("CumSum exclusive, reverse and a negative axis input", "[interp][reduce]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  NodeSpec s{"CumSum", 14, {x, i64({}, {1})}};
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{1, 3, 6, 4, 9, 15});
  s.attributes["exclusive"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{0, 1, 3, 0, 4, 9});
  s.attributes["reverse"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{5, 3, 0, 11, 6, 0});
  NodeSpec axis0{"CumSum", 14, {i64({2, 2}, {1, 2, 3, 4}), i32({}, {-2})}};
  CHECK(values_of<int64_t>(run_one(axis0)) == std::vector<int64_t>{1, 2, 4, 6});
  auto bad = run_node({"CumSum", 14, {x, f32({}, {1})}});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("axis must be one int32/int64 value"));
}

TEST_CASE("TopK largest and smallest, ties by lower index", "[interp][reduce]") {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, 4, 4, 6});
  NodeSpec s{"TopK", 11, {x, i64({1}, {2})}};
  s.num_outputs = 2;
  auto out = run_node(s);
  REQUIRE(out.has_value());
  CHECK((*out)[0].shape() == Dims{2, 2});
  CHECK(values_of<float>((*out)[0]) == std::vector<float>{3, 3, 6, 5});
  CHECK(values_of<int64_t>((*out)[1]) == std::vector<int64_t>{1, 2, 3, 0});
  s.attributes["largest"] = Attribute::of_int(0);
  out = run_node(s);
  REQUIRE(out.has_value());
  CHECK(values_of<float>((*out)[0]) == std::vector<float>{1, 2, 4, 4});
  CHECK(values_of<int64_t>((*out)[1]) == std::vector<int64_t>{0, 3, 1, 2});
  // Along axis 0, with the opset-1 k attribute.
  NodeSpec old{"TopK", 1, {x}};
  old.num_outputs = 2;
  old.attributes["k"] = Attribute::of_int(1);
  old.attributes["axis"] = Attribute::of_int(0);
  out = run_node(old);
  REQUIRE(out.has_value());
  CHECK(values_of<float>((*out)[0]) == std::vector<float>{5, 4, 4, 6});
  CHECK(values_of<int64_t>((*out)[1]) == std::vector<int64_t>{1, 1, 1, 1});
  auto bad = run_node({"TopK", 11, {x, i64({1}, {5})}});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("k = 5 is outside"));
}

TEST_CASE("TopK puts NaN above every number", "[interp][reduce]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  NodeSpec s{"TopK", 11, {f32({4}, {1, nan, 3, 2}), i64({1}, {2})}};
  s.num_outputs = 2;
  auto out = run_node(s);
  REQUIRE(out.has_value());
  CHECK(values_of<int64_t>((*out)[1]) == std::vector<int64_t>{1, 2});
}
