// Indexing ops (shape-index family) through one-node graphs: hand-computed
// values, negative indices, reductions, and refusal of out-of-range indices
// before any kernel reads with them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::boolean;
using quant::testing::f32;
using quant::testing::i32;
using quant::testing::i64;
using quant::testing::run_error;
using quant::testing::run_ok;
using quant::testing::values_of;

TEST_CASE("Gather along an axis with 2-D and negative indices", "[interp][index]") {
  Tensor x = i32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = run_ok({"Gather", 13, {x, i64({2, 2}, {0, -1, 1, 1})}})[0];
  CHECK(y.shape() == Dims{2, 2, 2});
  CHECK(values_of<int32_t>(y) == std::vector<int32_t>{1, 2, 5, 6, 3, 4, 3, 4});
  NodeSpec ax{"Gather", 13, {x, i32({}, {1})}};
  ax.attributes["axis"] = Attribute::of_int(1);
  Tensor col = run_ok(ax)[0];
  CHECK(col.shape() == Dims{3});
  CHECK(values_of<int32_t>(col) == std::vector<int32_t>{2, 4, 6});
  CHECK_THAT(run_error({"Gather", 13, {x, i64({1}, {3})}}), Catch::Contains("out of range"));
}

TEST_CASE("GatherElements and GatherND with batch_dims", "[interp][index]") {
  NodeSpec ge{"GatherElements", 13, {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, -2})}};
  ge.attributes["axis"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_ok(ge)[0]) == std::vector<float>{1, 1, 4, 3});
  ge.inputs[1] = i64({3, 1}, {0, 0, 0});
  CHECK_THAT(run_error(ge), Catch::Contains("exceed"));

  // data [2, 2, 2]; batch_dims 1, tuples of length 1 select rows of each batch entry.
  NodeSpec nd{"GatherND", 13, {i32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), i64({2, 1}, {1, 0})}};
  nd.attributes["batch_dims"] = Attribute::of_int(1);
  Tensor y = run_ok(nd)[0];
  CHECK(y.shape() == Dims{2, 2});
  CHECK(values_of<int32_t>(y) == std::vector<int32_t>{2, 3, 4, 5});
  NodeSpec full{"GatherND", 13, {i32({2, 2}, {0, 1, 2, 3}), i64({2, 2}, {1, 0, 0, -1})}};
  CHECK(values_of<int32_t>(run_ok(full)[0]) == std::vector<int32_t>{2, 1});
  full.inputs[1] = i64({1, 2}, {2, 0});
  CHECK_THAT(run_error(full), Catch::Contains("out of range"));
}

TEST_CASE("ScatterElements and ScatterND with reductions (opset 16)", "[interp][index]") {
  Tensor data = f32({1, 3}, {1, 2, 3});
  NodeSpec se{"ScatterElements", 16, {data, i64({1, 2}, {1, 1}), f32({1, 2}, {10, 20})}};
  se.attributes["axis"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_ok(se)[0]) == std::vector<float>{1, 20, 3});  // last write wins
  se.attributes["reduction"] = Attribute::of_string("add");
  CHECK(values_of<float>(run_ok(se)[0]) == std::vector<float>{1, 32, 3});
  NodeSpec old = se;
  old.opset = 13;
  CHECK_THAT(run_error(old), Catch::Contains("reduction"));
  NodeSpec scatter{"Scatter", 10, {i32({3}, {0, 0, 0}), i64({1}, {-1}), i32({1}, {5})}};
  CHECK(values_of<int32_t>(run_ok(scatter)[0]) == std::vector<int32_t>{0, 0, 5});

  NodeSpec nd{"ScatterND", 16, {i64({2, 2}, {1, 2, 3, 4}), i64({2, 1}, {1, 1}), i64({2, 2}, {2, 2, 3, 3})}};
  nd.attributes["reduction"] = Attribute::of_string("mul");
  CHECK(values_of<int64_t>(run_ok(nd)[0]) == std::vector<int64_t>{1, 2, 18, 24});
  NodeSpec b{"ScatterND", 13, {boolean({3}, {0, 0, 0}), i64({1, 1}, {2}), boolean({1}, {1})}};
  CHECK(values_of<uint8_t>(run_ok(b)[0]) == std::vector<uint8_t>{0, 0, 1});
  b.inputs[2] = boolean({2}, {1, 1});
  CHECK_THAT(run_error(b), Catch::Contains("updates must be"));
}

TEST_CASE("OneHot with axis and negative indices", "[interp][index]") {
  NodeSpec s{"OneHot", 11, {i64({2}, {1, -1}), f32({}, {3}), f32({2}, {0, 5})}};
  Tensor y = run_ok(s)[0];
  CHECK(y.shape() == Dims{2, 3});
  CHECK(values_of<float>(y) == std::vector<float>{0, 5, 0, 0, 0, 5});
  s.attributes["axis"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{0, 0, 5, 0, 0, 5});
  s.inputs[0] = i64({1}, {7});  // out of range: all off
  CHECK(values_of<float>(run_ok(s)[0]) == std::vector<float>{0, 0, 0});
}

TEST_CASE("NonZero, Compress", "[interp][index]") {
  Tensor nz = run_ok({"NonZero", 13, {boolean({2, 2}, {1, 0, 1, 1})}})[0];
  CHECK(nz.shape() == Dims{2, 3});
  CHECK(values_of<int64_t>(nz) == std::vector<int64_t>{0, 1, 1, 0, 0, 1});
  CHECK(run_ok({"NonZero", 13, {f32({2}, {0, -0.0f})}})[0].shape() == Dims{1, 0});

  NodeSpec c{"Compress", 11, {i32({2, 2}, {1, 2, 3, 4}), boolean({2}, {0, 1})}};
  c.attributes["axis"] = Attribute::of_int(1);
  CHECK(values_of<int32_t>(run_ok(c)[0]) == std::vector<int32_t>{2, 4});
  NodeSpec flat{"Compress", 11, {i32({2, 2}, {1, 2, 3, 4}), boolean({3}, {1, 0, 1})}};
  CHECK(values_of<int32_t>(run_ok(flat)[0]) == std::vector<int32_t>{1, 3});
  flat.inputs[1] = boolean({5}, {1, 0, 1, 0, 0});
  CHECK_THAT(run_error(flat), Catch::Contains("condition has 5"));
}

TEST_CASE("Unique sorted and in order of first occurrence, with an axis", "[interp][index]") {
  NodeSpec s{"Unique", 11, {f32({5}, {2, 1, 1, 3, 2})}};
  s.num_outputs = 4;
  auto o = run_ok(s);
  CHECK(values_of<float>(o[0]) == std::vector<float>{1, 2, 3});
  CHECK(values_of<int64_t>(o[1]) == std::vector<int64_t>{1, 0, 3});
  CHECK(values_of<int64_t>(o[2]) == std::vector<int64_t>{1, 0, 0, 2, 1});
  CHECK(values_of<int64_t>(o[3]) == std::vector<int64_t>{2, 2, 1});
  s.attributes["sorted"] = Attribute::of_int(0);
  o = run_ok(s);
  CHECK(values_of<float>(o[0]) == std::vector<float>{2, 1, 3});
  CHECK(values_of<int64_t>(o[2]) == std::vector<int64_t>{0, 1, 1, 2, 0});

  NodeSpec rows{"Unique", 11, {i32({3, 2}, {1, 0, 0, 5, 1, 0})}};
  rows.attributes["axis"] = Attribute::of_int(0);
  rows.num_outputs = 4;
  o = run_ok(rows);
  CHECK(o[0].shape() == Dims{2, 2});
  CHECK(values_of<int32_t>(o[0]) == std::vector<int32_t>{0, 5, 1, 0});
  CHECK(values_of<int64_t>(o[3]) == std::vector<int64_t>{1, 2});
}

TEST_CASE("Indexing ops refuse or survive hostile values", "[interp][index]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THAT(run_error({"OneHot", 11, {i64({1}, {0}), f32({}, {nan}), f32({2}, {0, 1})}}), Catch::Contains("depth"));
  CHECK_THAT(run_error({"OneHot", 11, {i64({1}, {0}), f32({}, {1e30f}), f32({2}, {0, 1})}}), Catch::Contains("depth"));
  // A NaN index is off everywhere.
  CHECK(values_of<float>(run_ok({"OneHot", 11, {f32({1}, {nan}), f32({}, {2}), f32({2}, {0, 1})}})[0]) ==
        std::vector<float>{0, 0});
  // NaN sorts last and equals NaN in Unique, as in numpy.
  NodeSpec u{"Unique", 11, {f32({4}, {nan, 1, nan, 0})}};
  Tensor y = run_ok(u)[0];
  REQUIRE(y.size() == 3);
  CHECK(values_of<float>(y)[0] == 0);
  CHECK(values_of<float>(y)[1] == 1);
  CHECK(std::isnan(values_of<float>(y)[2]));
}
