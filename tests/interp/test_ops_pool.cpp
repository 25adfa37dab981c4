// Pooling additions and ConvTranspose through one-node graphs: MaxPool's
// Indices output and integer inputs, GlobalMaxPool, LpPool, MaxUnpool, and
// ConvTranspose's attributes (output_shape, output_padding, group, auto_pad).
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
using quant::testing::run_ok;
using quant::testing::values_of;

TEST_CASE("MaxPool with Indices (storage_order 0 and 1) and uint8 input", "[interp][pool]") {
  NodeSpec s{"MaxPool", 12, {f32({1, 1, 2, 3}, {1, 9, 2, 7, 3, 8})}};
  s.attributes["kernel_shape"] = Attribute::of_ints({2, 2});
  s.num_outputs = 2;
  auto o = run_ok(s);
  CHECK(values_of<float>(o[0]) == std::vector<float>{9, 9});
  CHECK(values_of<int64_t>(o[1]) == std::vector<int64_t>{1, 1});
  s.attributes["storage_order"] = Attribute::of_int(1);
  o = run_ok(s);
  CHECK(values_of<int64_t>(o[1]) == std::vector<int64_t>{2, 2});  // (h 0, w 1) -> 0 + 2 * 1

  NodeSpec u{"MaxPool", 12, {Tensor::from_vector<uint8_t>({1, 1, 3}, {200, 3, 250})}};
  u.attributes["kernel_shape"] = Attribute::of_ints({2});
  Tensor y = run_ok(u)[0];
  CHECK(y.dtype() == DType::UInt8);
  CHECK(values_of<uint8_t>(y) == std::vector<uint8_t>{200, 250});
}

TEST_CASE("GlobalMaxPool, GlobalLpPool, LpPool", "[interp][pool]") {
  Tensor x = f32({1, 2, 2}, {3, -4, -1, 0});
  CHECK(values_of<float>(run_ok({"GlobalMaxPool", 13, {x}})[0]) == std::vector<float>{3, 0});
  Tensor lp = run_ok({"GlobalLpPool", 13, {x}})[0];
  CHECK(lp.shape() == Dims{1, 2, 1});
  CHECK(values_of<float>(lp)[0] == Approx(5.0f));
  NodeSpec s{"LpPool", 11, {x}};
  s.attributes["kernel_shape"] = Attribute::of_ints({2});
  s.attributes["p"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{7, 1});
}

TEST_CASE("MaxUnpool inverts MaxPool's Indices", "[interp][pool]") {
  NodeSpec s{"MaxUnpool", 11, {f32({1, 1, 1, 2}, {5, 6}), i64({1, 1, 1, 2}, {2, 1})}};
  s.attributes["kernel_shape"] = Attribute::of_ints({2, 2});
  s.attributes["strides"] = Attribute::of_ints({2, 2});
  Tensor y = run_ok(s)[0];
  CHECK(y.shape() == Dims{1, 1, 2, 4});
  CHECK(values_of<float>(y) == std::vector<float>{0, 6, 5, 0, 0, 0, 0, 0});
  // output_shape pads the unpooled [1,1,2,4] at the end of each axis; the
  // indices still address the unpooled shape (ONNX reference op_max_unpool.py).
  s.inputs.push_back(i64({4}, {1, 1, 3, 5}));
  y = run_ok(s)[0];
  CHECK(y.shape() == Dims{1, 1, 3, 5});
  CHECK(values_of<float>(y) == std::vector<float>{0, 6, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  s.inputs[2] = i64({4}, {1, 1, 1, 4});
  CHECK_THAT(run_node(s).status().message(), Catch::Contains("smaller than the unpooled shape"));
  s.inputs[2] = i64({4}, {1, 1, 3, 4});
  s.inputs[1] = i64({1, 1, 1, 2}, {12, 0});
  auto bad = run_node(s);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("outside the output"));
}

TEST_CASE("ConvTranspose: strides, output_padding, output_shape, group, SAME_UPPER", "[interp][conv]") {
  // x [1,1,2], w [1,1,2] = [1, 10], stride 2: y = [1, 10, 2, 20].
  NodeSpec s{"ConvTranspose", 11, {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 10})}};
  s.attributes["strides"] = Attribute::of_ints({2});
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{1, 10, 2, 20});
  s.attributes["output_padding"] = Attribute::of_ints({1});
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{1, 10, 2, 20, 0});
  s.attributes.erase("output_padding");
  // output_shape 3, total pad 1: without auto_pad the spec puts the larger half first.
  s.attributes["output_shape"] = Attribute::of_ints({3});
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{10, 2, 20});
  s.attributes.erase("output_shape");
  s.attributes["auto_pad"] = Attribute::of_string("SAME_UPPER");  // out = in * stride = 4, no pad
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{1, 10, 2, 20});

  // Two groups of one channel each, with bias: each output channel sees only its input.
  NodeSpec g{"ConvTranspose", 11, {f32({1, 2, 1}, {1, 2}), f32({2, 1, 1}, {3, 4}), f32({2}, {0.5f, -1})}};
  g.attributes["group"] = Attribute::of_int(2);
  CHECK(values_of<float>(run_ok(g)[0]) == std::vector<float>{3.5f, 7});
  g.inputs[2] = f32({3}, {0, 0, 0});
  auto bad = run_node(g);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("bias"));
}
