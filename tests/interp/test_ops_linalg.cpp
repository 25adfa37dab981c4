// Einsum, Det, Trilu, and Gemm / MatMul on double and integer tensors.
#include <catch2/catch.hpp>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::f32;
using quant::testing::f64;
using quant::testing::i64;
using quant::testing::run_one;
using quant::testing::values_of;

namespace {

NodeSpec einsum(const std::string& eq, std::vector<Tensor> inputs) {
  NodeSpec s{"Einsum", 12, std::move(inputs)};
  s.attributes["equation"] = Attribute::of_string(eq);
  return s;
}

}  // namespace

TEST_CASE("Einsum transpose, sum, matmul, inner product", "[interp][einsum]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = run_one(einsum("ij->ji", {a}));
  CHECK(t.shape() == Dims{3, 2});
  CHECK(values_of<float>(t) == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(values_of<float>(run_one(einsum("ij -> i", {a}))) == std::vector<float>{6, 15});
  Tensor b = f32({3, 1}, {1, 0, 2});
  Tensor mm = run_one(einsum("ij,jk->ik", {a, b}));
  CHECK(mm.shape() == Dims{2, 1});
  CHECK(values_of<float>(mm) == std::vector<float>{7, 16});
  // Implicit output: labels seen once, in ASCII order -> "ik".
  CHECK(values_of<float>(run_one(einsum("ij,jk", {a, b}))) == std::vector<float>{7, 16});
  Tensor inner = run_one(einsum("i,i", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}));
  CHECK(inner.shape() == Dims{});
  CHECK(values_of<float>(inner) == std::vector<float>{32});
}

TEST_CASE("Einsum diagonal, trace, ellipsis broadcasting, integers", "[interp][einsum]") {
  Tensor m = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(values_of<float>(run_one(einsum("...ii->...i", {m}))) == std::vector<float>{1, 4, 5, 8});
  CHECK(values_of<float>(run_one(einsum("bii->b", {m}))) == std::vector<float>{5, 13});
  // Batch matmul with a broadcast batch: [2,2,2] x [1,2,1].
  Tensor v = f32({1, 2, 1}, {1, 1});
  Tensor y = run_one(einsum("...ij,...jk->...ik", {m, v}));
  CHECK(y.shape() == Dims{2, 2, 1});
  CHECK(values_of<float>(y) == std::vector<float>{3, 7, 11, 15});
  Tensor ints = run_one(einsum("ij,j->i", {i64({2, 2}, {1, 2, 3, 4}), i64({2}, {10, 1})}));
  CHECK(ints.dtype() == DType::Int64);
  CHECK(values_of<int64_t>(ints) == std::vector<int64_t>{12, 34});
  auto mismatch = run_node(einsum("ij,jk->ik", {m, v}));
  REQUIRE_FALSE(mismatch.has_value());
  auto bad_label = run_node(einsum("ij->iz", {f32({2, 2}, {1, 2, 3, 4})}));
  REQUIRE_FALSE(bad_label.has_value());
  CHECK_THAT(bad_label.status().message(), Catch::Contains("'z'"));
}

TEST_CASE("Det of a batch of matrices", "[interp][linalg]") {
  Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  Tensor y = run_one({"Det", 11, {x}});
  CHECK(y.shape() == Dims{2});
  CHECK(values_of<float>(y)[0] == Approx(-2));
  CHECK(values_of<float>(y)[1] == Approx(-1));
  Tensor d3 = run_one({"Det", 11, {f64({3, 3}, {2, 0, 0, 0, 3, 0, 1, 1, 4})}});
  CHECK(values_of<double>(d3)[0] == Approx(24));
  REQUIRE_FALSE(run_node({"Det", 11, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}}).has_value());
}

TEST_CASE("Trilu upper and lower with k", "[interp][linalg]") {
  Tensor x = i64({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(values_of<int64_t>(run_one({"Trilu", 14, {x}})) == std::vector<int64_t>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(values_of<int64_t>(run_one({"Trilu", 14, {x, i64({}, {1})}})) == std::vector<int64_t>{0, 2, 3, 0, 0, 6, 0, 0, 0});
  NodeSpec lower{"Trilu", 14, {x, i64({}, {-1})}};
  lower.attributes["upper"] = Attribute::of_int(0);
  CHECK(values_of<int64_t>(run_one(lower)) == std::vector<int64_t>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  // k beyond the matrix: everything kept or nothing.
  CHECK(values_of<int64_t>(run_one({"Trilu", 14, {x, i64({}, {-5})}})) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("Gemm and MatMul on double and int64", "[interp][gemm][matmul]") {
  NodeSpec g{"Gemm", 13, {f64({1, 2}, {1, 2}), f64({3, 2}, {1, 0, 0, 1, 1, 1}), f64({3}, {10, 20, 30})}};
  g.attributes["transB"] = Attribute::of_int(1);
  g.attributes["alpha"] = Attribute::of_float(2.0f);
  g.attributes["beta"] = Attribute::of_float(0.5f);
  Tensor y = run_one(g);
  CHECK(y.dtype() == DType::Float64);
  CHECK(values_of<double>(y) == std::vector<double>{7, 14, 21});
  Tensor mm = run_one({"MatMul", 13, {i64({2, 1, 2}, {1, 2, 3, 4}), i64({2}, {1, 1})}});
  CHECK(mm.dtype() == DType::Int64);
  CHECK(mm.shape() == Dims{2, 1});
  CHECK(values_of<int64_t>(mm) == std::vector<int64_t>{3, 7});
  auto mixed = run_node({"MatMul", 13, {f64({1, 1}, {1}), f32({1, 1}, {1})}});
  REQUIRE_FALSE(mixed.has_value());
}
