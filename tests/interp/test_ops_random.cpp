// Generator ops through one-node graphs: Bernoulli, RandomUniform and
// RandomUniformLike, seeded (repeatable, numpy's legacy stream) and not.
#include <catch2/catch.hpp>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::f32;
using quant::testing::f64;
using quant::testing::NodeSpec;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::values_of;

TEST_CASE("Bernoulli: certain probabilities, seeded repeatability, dtype", "[interp][random]") {
  NodeSpec s{"Bernoulli", 15, {f32({6}, {0, 1, 0, 1, 0.5f, 0.5f})}};
  s.attributes["seed"] = Attribute::of_float(3);
  std::vector<float> a = values_of<float>(run_one(s));
  CHECK(a[0] == 0);
  CHECK(a[1] == 1);
  CHECK(a[2] == 0);
  CHECK(a[3] == 1);
  CHECK(values_of<float>(run_one(s)) == a);  // the same seed draws the same values on every run
  s.attributes["dtype"] = Attribute::of_int(7);
  Tensor i = run_one(s);
  CHECK(i.dtype() == DType::Int64);
  CHECK(values_of<int64_t>(i)[1] == 1);
  CHECK_THAT(run_error({"Bernoulli", 15, {quant::testing::i64({1}, {1})}}), Catch::Contains("float32 or float64"));
}

TEST_CASE("RandomUniform and RandomUniformLike: range, shape, seed", "[interp][random]") {
  NodeSpec like{"RandomUniformLike", 1, {f64({2, 50}, std::vector<double>(100, 0))}};
  like.attributes["low"] = Attribute::of_float(-2);
  like.attributes["high"] = Attribute::of_float(3);
  like.attributes["seed"] = Attribute::of_float(0);
  Tensor y = run_one(like);
  CHECK(y.dtype() == DType::Float64);
  CHECK(y.shape() == Dims{2, 50});
  for (double v : values_of<double>(y)) {
    CHECK(v >= -2);
    CHECK(v < 3);
  }
  // numpy: np.random.seed(0); np.random.uniform(-2, 3) = -2 + 5 * 0.5488135039273248
  CHECK(values_of<double>(y)[0] == Approx(-2 + 5 * 0.5488135039273248));
  NodeSpec u{"RandomUniform", 1, {}};
  u.attributes["shape"] = Attribute::of_ints({3, 4});
  Tensor z = run_one(u);
  CHECK(z.dtype() == DType::Float32);
  CHECK(z.shape() == Dims{3, 4});
  u.attributes["dtype"] = Attribute::of_int(6);
  CHECK_THAT(run_error(u), Catch::Contains("dtype"));
}
