// Shape ops (shape-index family) through one-node graphs: hand-computed
// values, every element type for the byte-moving ops, opset differences
// (attributes that became inputs) and refusals of bad input.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::boolean;
using quant::testing::f32;
using quant::testing::i32;
using quant::testing::i64;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::values_of;

TEST_CASE("Reshape, Flatten, Transpose, Concat, Identity move int and bool tensors", "[interp][shape]") {
  Tensor b = boolean({2, 3}, {1, 0, 0, 1, 1, 0});
  Tensor r = run_one({"Reshape", 14, {b, i64({2}, {3, -1})}});
  CHECK(r.dtype() == DType::Bool);
  CHECK(r.shape() == Dims{3, 2});
  CHECK(values_of<uint8_t>(r) == std::vector<uint8_t>{1, 0, 0, 1, 1, 0});

  Tensor t = run_one({"Transpose", 13, {i32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  CHECK(t.dtype() == DType::Int32);
  CHECK(values_of<int32_t>(t) == std::vector<int32_t>{1, 4, 2, 5, 3, 6});

  Tensor f = run_one({"Flatten", 13, {Tensor::from_vector<int8_t>({2, 1, 2}, {-1, 2, -3, 4})}});
  CHECK(f.dtype() == DType::Int8);
  CHECK(f.shape() == Dims{2, 2});

  NodeSpec cc{"Concat", 13, {i64({2, 1}, {1, 2}), i64({2, 2}, {3, 4, 5, 6})}};
  cc.attributes["axis"] = Attribute::of_int(-1);
  CHECK(values_of<int64_t>(run_one(cc)) == std::vector<int64_t>{1, 3, 4, 2, 5, 6});

  Tensor id = run_one({"Identity", 13, {b}});
  CHECK(id.dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(id) == values_of<uint8_t>(b));
}

TEST_CASE("Reshape allowzero keeps a 0 as a dim (opset 14)", "[interp][shape]") {
  Tensor x(DType::Float32, {0, 3});
  NodeSpec s{"Reshape", 14, {x, i64({2}, {3, 0})}};
  s.attributes["allowzero"] = Attribute::of_int(1);
  CHECK(run_one(s).shape() == Dims{3, 0});
  s.attributes.clear();  // without allowzero the 0 copies dim 1 (3): 0 elements cannot fill [3, 3]
  CHECK_THAT(run_error(s), Catch::Contains("cannot reshape"));
  NodeSpec both{"Reshape", 14, {x, i64({2}, {0, -1})}};
  both.attributes["allowzero"] = Attribute::of_int(1);
  CHECK_THAT(run_error(both), Catch::Contains("both 0 and -1"));
}

TEST_CASE("Squeeze and Unsqueeze: axes attribute before 13, input from 13", "[interp][shape]") {
  Tensor x = f32({1, 2, 1}, {1, 2});
  CHECK(run_one({"Squeeze", 13, {x}}).shape() == Dims{2});
  CHECK(run_one({"Squeeze", 13, {x, i64({1}, {-1})}}).shape() == Dims{1, 2});
  NodeSpec old{"Squeeze", 11, {x}};
  old.attributes["axes"] = Attribute::of_ints({0});
  CHECK(run_one(old).shape() == Dims{2, 1});
  CHECK_THAT(run_error({"Squeeze", 13, {x, i64({1}, {1})}}), Catch::Contains("is not 1"));

  // Output rank 5; axes -1 and 0 refer to the output.
  Tensor u = run_one({"Unsqueeze", 13, {x, i64({2}, {-1, 0})}});
  CHECK(u.shape() == Dims{1, 1, 2, 1, 1});
  NodeSpec uold{"Unsqueeze", 11, {boolean({2}, {1, 0})}};
  uold.attributes["axes"] = Attribute::of_ints({1});
  Tensor ub = run_one(uold);
  CHECK(ub.shape() == Dims{2, 1});
  CHECK(ub.dtype() == DType::Bool);
  CHECK_THAT(run_error({"Unsqueeze", 13, {x, i64({2}, {1, 1})}}), Catch::Contains("repeat"));
}

TEST_CASE("Shape with start/end (opset 15) and Size", "[interp][shape]") {
  Tensor x(DType::Int32, {2, 3, 4});
  CHECK(values_of<int64_t>(run_one({"Shape", 13, {x}})) == std::vector<int64_t>{2, 3, 4});
  NodeSpec s{"Shape", 15, {x}};
  s.attributes["start"] = Attribute::of_int(-2);
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{3, 4});
  s.attributes["end"] = Attribute::of_int(10);  // clamped to the rank
  s.attributes["start"] = Attribute::of_int(1);
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{3, 4});
  s.attributes["end"] = Attribute::of_int(-3);  // empty range
  CHECK(run_one(s).shape() == Dims{0});
  Tensor n = run_one({"Size", 13, {x}});
  CHECK(n.rank() == 0);
  CHECK(values_of<int64_t>(n) == std::vector<int64_t>{24});
}

TEST_CASE("Expand broadcasts both ways, Tile repeats", "[interp][shape]") {
  Tensor x = i32({3, 1}, {1, 2, 3});
  Tensor e = run_one({"Expand", 13, {x, i64({3}, {2, 1, 2})}});
  CHECK(e.shape() == Dims{2, 3, 2});
  CHECK(values_of<int32_t>(e) == std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  CHECK_THAT(run_error({"Expand", 13, {x, i64({2}, {2, 3})}}), Catch::Contains("cannot broadcast"));
  CHECK_THAT(run_error({"Expand", 13, {x, i64({3}, {int64_t{1} << 40, 1, 1})}}), Catch::Contains("too large"));

  Tensor t = run_one({"Tile", 13, {boolean({2}, {1, 0}), i64({1}, {3})}});
  CHECK(values_of<uint8_t>(t) == std::vector<uint8_t>{1, 0, 1, 0, 1, 0});
  Tensor t2 = run_one({"Tile", 13, {f32({1, 2}, {1, 2}), i64({2}, {2, 2})}});
  CHECK(t2.shape() == Dims{2, 4});
  CHECK(values_of<float>(t2) == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2});
  CHECK_THAT(run_error({"Tile", 13, {x, i64({1}, {2})}}), Catch::Contains("repeats"));
}

TEST_CASE("ConstantOfShape, EyeLike, Range", "[interp][shape]") {
  NodeSpec c{"ConstantOfShape", 13, {i64({2}, {2, 2})}};
  c.attributes["value"] = Attribute::of_tensor(Tensor::from_vector<int32_t>({1}, {7}));
  Tensor ct = run_one(c);
  CHECK(ct.dtype() == DType::Int32);
  CHECK(values_of<int32_t>(ct) == std::vector<int32_t>{7, 7, 7, 7});
  Tensor zero = run_one({"ConstantOfShape", 13, {i64({1}, {3})}});
  CHECK(zero.dtype() == DType::Float32);
  CHECK(values_of<float>(zero) == std::vector<float>{0, 0, 0});

  NodeSpec eye{"EyeLike", 13, {Tensor(DType::Int32, {2, 3})}};
  eye.attributes["k"] = Attribute::of_int(1);
  CHECK(values_of<int32_t>(run_one(eye)) == std::vector<int32_t>{0, 1, 0, 0, 0, 1});
  eye.attributes["dtype"] = Attribute::of_int(9);  // bool
  eye.attributes["k"] = Attribute::of_int(-1);
  Tensor eb = run_one(eye);
  CHECK(eb.dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(eb) == std::vector<uint8_t>{0, 0, 0, 1, 0, 0});

  CHECK(values_of<int32_t>(run_one({"Range", 13, {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4),
                                               Tensor::scalar<int32_t>(-3)}})) == std::vector<int32_t>{10, 7});
  Tensor rf = run_one({"Range", 13, {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.25f)}});
  CHECK(values_of<float>(rf) == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
  CHECK(run_one({"Range", 13, {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(1)}}).shape() ==
        Dims{0});
  CHECK_THAT(run_error({"Range", 13, {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(0)}}),
             Catch::Contains("delta"));
}

TEST_CASE("Slice: opset 1 attributes, opset 10+ inputs, negative steps and clamping", "[interp][shape]") {
  Tensor x = i64({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  NodeSpec old{"Slice", 9, {x}};
  old.attributes["starts"] = Attribute::of_ints({1});
  old.attributes["ends"] = Attribute::of_ints({1000});
  old.attributes["axes"] = Attribute::of_ints({1});
  CHECK(values_of<int64_t>(run_one(old)) == std::vector<int64_t>{1, 2, 3, 11, 12, 13, 21, 22, 23});

  // Rows reversed from the last, every second column from -1 down to the start.
  const int64_t lo = std::numeric_limits<int64_t>::min();
  Tensor r = run_one({"Slice", 13, {x, i64({2}, {-1, -1}), i64({2}, {lo, lo}), i64({2}, {0, 1}), i64({2}, {-1, -2})}});
  CHECK(r.shape() == Dims{3, 2});
  CHECK(values_of<int64_t>(r) == std::vector<int64_t>{23, 21, 13, 11, 3, 1});
  // Start past the end: empty.
  CHECK(run_one({"Slice", 13, {x, i64({1}, {7}), i64({1}, {9}), i64({1}, {1})}}).shape() == Dims{3, 0});
  CHECK_THAT(run_error({"Slice", 13, {x, i64({1}, {0}), i64({1}, {1}), i64({1}, {0}), i64({1}, {0})}}),
             Catch::Contains("step"));
}

TEST_CASE("Split: equal parts, attribute sizes before 13, input sizes from 13", "[interp][shape]") {
  Tensor x = i32({6}, {1, 2, 3, 4, 5, 6});
  NodeSpec eq{"Split", 13, {x}};
  eq.num_outputs = 3;
  auto parts = run_node(eq);
  REQUIRE(parts.has_value());
  CHECK(values_of<int32_t>((*parts)[2]) == std::vector<int32_t>{5, 6});
  NodeSpec attr{"Split", 11, {x}};
  attr.num_outputs = 2;
  attr.attributes["split"] = Attribute::of_ints({2, 4});
  auto a = run_node(attr);
  REQUIRE(a.has_value());
  CHECK(values_of<int32_t>((*a)[1]) == std::vector<int32_t>{3, 4, 5, 6});
  NodeSpec in{"Split", 13, {x, i64({2}, {5, 1})}};
  in.num_outputs = 2;
  auto b = run_node(in);
  REQUIRE(b.has_value());
  CHECK(values_of<int32_t>((*b)[1]) == std::vector<int32_t>{6});
  NodeSpec bad{"Split", 13, {x, i64({2}, {5, 2})}};
  bad.num_outputs = 2;
  CHECK_THAT(run_error(bad), Catch::Contains("add up"));
  NodeSpec uneven{"Split", 13, {i32({5}, {1, 2, 3, 4, 5})}};
  uneven.num_outputs = 2;
  CHECK_THAT(run_error(uneven), Catch::Contains("equal parts"));
}

TEST_CASE("Pad: constant, reflect, edge, negative pads, opset 2 attributes", "[interp][shape]") {
  Tensor x = f32({1, 3}, {1, 2, 3});
  NodeSpec c{"Pad", 13, {x, i64({4}, {0, 2, 0, 1}), f32({}, {9})}};
  CHECK(values_of<float>(run_one(c)) == std::vector<float>{9, 9, 1, 2, 3, 9});
  NodeSpec refl{"Pad", 13, {x, i64({4}, {0, 2, 0, 2})}};
  refl.attributes["mode"] = Attribute::of_string("reflect");
  CHECK(values_of<float>(run_one(refl)) == std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  NodeSpec edge{"Pad", 13, {x, i64({4}, {1, 1, 0, 0})}};
  edge.attributes["mode"] = Attribute::of_string("edge");
  Tensor e = run_one(edge);
  CHECK(e.shape() == Dims{2, 4});
  CHECK(values_of<float>(e) == std::vector<float>{1, 1, 2, 3, 1, 1, 2, 3});
  // A negative pad crops: drop the first column, add one zero at the end.
  CHECK(values_of<float>(run_one({"Pad", 13, {x, i64({4}, {0, -1, 0, 1})}})) == std::vector<float>{2, 3, 0});
  NodeSpec old{"Pad", 2, {i32({2}, {1, 2})}};
  old.attributes["pads"] = Attribute::of_ints({1, 0});
  CHECK(values_of<int32_t>(run_one(old)) == std::vector<int32_t>{0, 1, 2});
  CHECK_THAT(run_error({"Pad", 13, {x, i64({2}, {0, 1})}}), Catch::Contains("pads has 2 values"));
  CHECK_THAT(run_error({"Pad", 13, {x, i64({4}, {0, -4, 0, 0})}}), Catch::Contains("crops"));
}

TEST_CASE("DepthToSpace DCR and CRD, SpaceToDepth inverts DCR", "[interp][shape]") {
  // 4 channels of 1x1, blocksize 2 -> 1 channel 2x2.
  Tensor x = i32({1, 4, 1, 1}, {1, 2, 3, 4});
  NodeSpec dcr{"DepthToSpace", 13, {x}};
  dcr.attributes["blocksize"] = Attribute::of_int(2);
  CHECK(values_of<int32_t>(run_one(dcr)) == std::vector<int32_t>{1, 2, 3, 4});
  // 8 channels 1x1 into 2 channels: DCR takes channel c from [b1, b2, c], CRD from [c, b1, b2].
  Tensor x8 = i32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  dcr.inputs = {x8};
  CHECK(values_of<int32_t>(run_one(dcr)) == std::vector<int32_t>{0, 2, 4, 6, 1, 3, 5, 7});
  NodeSpec crd = dcr;
  crd.attributes["mode"] = Attribute::of_string("CRD");
  CHECK(values_of<int32_t>(run_one(crd)) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  NodeSpec s2d{"SpaceToDepth", 13, {run_one(dcr)}};
  s2d.attributes["blocksize"] = Attribute::of_int(2);
  Tensor back = run_one(s2d);
  CHECK(back.shape() == Dims{1, 8, 1, 1});
  CHECK(values_of<int32_t>(back) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  dcr.inputs = {i32({1, 3, 1, 1}, {1, 2, 3})};
  CHECK_THAT(run_error(dcr), Catch::Contains("divisible"));
}

TEST_CASE("ReverseSequence along time for each batch entry", "[interp][shape]") {
  // time-major [time 3, batch 2]: batch 0 reverses 3 steps, batch 1 reverses 2.
  Tensor x = i32({3, 2}, {0, 10, 1, 11, 2, 12});
  NodeSpec s{"ReverseSequence", 10, {x, i64({2}, {3, 2})}};
  CHECK(values_of<int32_t>(run_one(s)) == std::vector<int32_t>{2, 11, 1, 10, 0, 12});
  s.inputs[1] = i64({2}, {4, 1});
  CHECK_THAT(run_error(s), Catch::Contains("out of range"));
}

TEST_CASE("Range, Pad and Split refuse values that would overflow", "[interp][shape]") {
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  CHECK_THAT(run_error({"Range", 13, {Tensor::scalar<int64_t>(small), Tensor::scalar<int64_t>(big),
                                     Tensor::scalar<int64_t>(big)}}),
             Catch::Contains("overflows"));
  CHECK_THAT(run_error({"Pad", 13, {f32({1}, {1}), i64({2}, {small, 0})}}), Catch::Contains("too large"));
  NodeSpec split{"Split", 13, {i32({2}, {1, 2}), i64({2}, {big, small + 2})}};
  split.num_outputs = 2;
  CHECK_THAT(run_error(split), Catch::Contains("out of range"));
}
