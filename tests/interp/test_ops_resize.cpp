// Resize and Upsample through one-node graphs: where scales, sizes and roi
// come from per opset, nearest on integer tensors, and refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::f32;
using quant::testing::i64;
using quant::testing::run_one;
using quant::testing::values_of;

TEST_CASE("Resize-13 with scales or sizes, linear and nearest", "[interp][resize]") {
  Tensor x = f32({1, 2}, {1, 2});
  NodeSpec s{"Resize", 13, {x, Tensor(), f32({2}, {1, 2})}};
  s.attributes["mode"] = Attribute::of_string("linear");
  Tensor y = run_one(s);
  CHECK(y.shape() == Dims{1, 4});
  CHECK(values_of<float>(y) == std::vector<float>{1, 1.25f, 1.75f, 2});
  NodeSpec sz{"Resize", 13, {x, Tensor(), Tensor(), i64({2}, {1, 3})}};
  sz.attributes["mode"] = Attribute::of_string("linear");
  sz.attributes["coordinate_transformation_mode"] = Attribute::of_string("align_corners");
  CHECK(values_of<float>(run_one(sz)) == std::vector<float>{1, 1.5f, 2});

  NodeSpec both{"Resize", 13, {x, Tensor(), f32({2}, {1, 2}), i64({2}, {1, 3})}};
  auto bad = run_node(both);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("not both"));
  NodeSpec huge{"Resize", 13, {x, Tensor(), f32({2}, {1, 1e12f})}};
  REQUIRE_FALSE(run_node(huge).has_value());
}

TEST_CASE("Resize nearest moves any element type; tf_crop_and_resize reads roi", "[interp][resize]") {
  NodeSpec s{"Resize", 11, {Tensor::from_vector<int8_t>({3}, {-1, 5, 9}), f32({0}, {}), f32({1}, {2})}};
  s.attributes["nearest_mode"] = Attribute::of_string("floor");
  s.attributes["coordinate_transformation_mode"] = Attribute::of_string("asymmetric");
  Tensor y = run_one(s);
  CHECK(y.dtype() == DType::Int8);
  CHECK(values_of<int8_t>(y) == std::vector<int8_t>{-1, -1, 5, 5, 9, 9});

  NodeSpec crop{"Resize", 13, {f32({3}, {1, 2, 3}), f32({2}, {0, 2}), Tensor(), i64({1}, {3})}};
  crop.attributes["mode"] = Attribute::of_string("linear");
  crop.attributes["coordinate_transformation_mode"] = Attribute::of_string("tf_crop_and_resize");
  crop.attributes["extrapolation_value"] = Attribute::of_float(-5);
  CHECK(values_of<float>(run_one(crop)) == std::vector<float>{1, 3, -5});
}

TEST_CASE("Resize-10 and Upsample use asymmetric coordinates", "[interp][resize]") {
  NodeSpec r10{"Resize", 10, {f32({1, 4}, {1, 2, 3, 4}), f32({2}, {1, 0.5f})}};
  CHECK(values_of<float>(run_one(r10)) == std::vector<float>{1, 3});  // shrinking rounds up (ONNX Runtime)
  NodeSpec up9{"Upsample", 9, {f32({1, 2}, {1, 2}), f32({2}, {1, 2})}};
  CHECK(values_of<float>(run_one(up9)) == std::vector<float>{1, 1, 2, 2});
  NodeSpec up7{"Upsample", 7, {f32({1, 2}, {1, 2})}};
  up7.attributes["scales"] = Attribute::of_floats({1, 2});
  up7.attributes["mode"] = Attribute::of_string("linear");
  CHECK(values_of<float>(run_one(up7)) == std::vector<float>{1, 1.5f, 2, 2});
}

TEST_CASE("Resize survives a NaN roi", "[interp][resize]") {
  NodeSpec s{"Resize", 13, {f32({2}, {1, 2}), f32({2}, {std::nanf(""), 1}), Tensor(), i64({1}, {3})}};
  s.attributes["mode"] = Attribute::of_string("cubic");
  s.attributes["coordinate_transformation_mode"] = Attribute::of_string("tf_crop_and_resize");
  s.attributes["extrapolation_value"] = Attribute::of_float(7);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{7, 7, 7});
}
