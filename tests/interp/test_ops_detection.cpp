// Detection and sampling ops through one-node graphs: NonMaxSuppression,
// RoiAlign, GridSample (every mode and padding), Shrink, and their refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::f32;
using quant::testing::i64;
using quant::testing::NodeSpec;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::values_of;

TEST_CASE("NonMaxSuppression: IoU suppression, score threshold, per-class cap, center boxes", "[interp][detection]") {
  // Box 1 overlaps box 0 with IoU 81/119 ~ 0.68; box 2 is apart; corners of box 1 come flipped.
  Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 11, 11, 1, 1, 20, 20, 30, 30});
  Tensor scores = f32({1, 2, 3}, {0.9f, 0.95f, 0.3f, 0.1f, 0.2f, 0.6f});
  NodeSpec s{"NonMaxSuppression", 11, {boxes, scores, i64({1}, {3}), f32({1}, {0.5f})}};
  // Class 0: box 1 (0.95) first, box 0 suppressed, box 2 kept; class 1: 2, 1 (0 overlaps 1).
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 1, 2, 0, 1, 1});
  s.inputs.push_back(f32({1}, {0.25f}));  // score_threshold: strictly above
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 1, 2});
  s.inputs[2] = i64({1}, {1});
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{0, 0, 1, 0, 1, 2});
  s.inputs[3] = f32({1}, {0.7f});  // IoU 0.68 no longer suppresses
  s.inputs[2] = i64({1}, {5});
  CHECK(values_of<int64_t>(run_one(s)) == std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 1, 2});
  // No max_output_boxes_per_class: nothing selected.
  Tensor none = run_one({"NonMaxSuppression", 11, {boxes, scores}});
  CHECK(none.shape() == Dims{0, 3});

  // center_point_box 1: the same first two boxes as centers and sizes.
  NodeSpec c{"NonMaxSuppression", 11,
             {f32({1, 2, 4}, {5, 5, 10, 10, 6, 6, 10, 10}), f32({1, 1, 2}, {0.5f, 0.6f}), i64({1}, {2}), f32({1}, {0.5f})}};
  c.attributes["center_point_box"] = Attribute::of_int(1);
  CHECK(values_of<int64_t>(run_one(c)) == std::vector<int64_t>{0, 0, 1});
}

TEST_CASE("NonMaxSuppression refusals", "[interp][detection]") {
  CHECK_THAT(run_error({"NonMaxSuppression", 11, {f32({1, 2, 3}, std::vector<float>(6)), f32({1, 1, 2}, {1, 1})}}),
             Catch::Contains("boxes [batches, boxes, 4]"));
  CHECK_THAT(run_error({"NonMaxSuppression", 11, {f32({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 2}, {1, 1})}}),
             Catch::Contains("scores"));
  CHECK_THAT(run_error({"NonMaxSuppression", 11, {f32({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 1}, {1}), i64({1}, {1}),
                                                    f32({1}, {2.0f})}}),
             Catch::Contains("iou_threshold"));
  NodeSpec bad{"NonMaxSuppression", 11, {f32({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 1}, {1})}};
  bad.attributes["center_point_box"] = Attribute::of_int(2);
  CHECK_THAT(run_error(bad), Catch::Contains("center_point_box"));
}

TEST_CASE("RoiAlign: averages of a ramp, max mode, both coordinate modes", "[interp][detection]") {
  // x[h][w] = w on a 4x4 plane: bilinear samples of a ramp are their x coordinates.
  std::vector<float> ramp;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) ramp.push_back(static_cast<float>(c));
  Tensor x = f32({1, 1, 4, 4}, ramp);
  NodeSpec s{"RoiAlign", 16, {x, f32({1, 4}, {0.5f, 0.5f, 2.5f, 2.5f}), i64({1}, {0})}};
  s.attributes["output_height"] = Attribute::of_int(1);
  s.attributes["output_width"] = Attribute::of_int(2);
  s.attributes["sampling_ratio"] = Attribute::of_int(2);
  // half_pixel: roi [0, 2] in pixel units, bins [0, 1] and [1, 2], samples at 0.25, 0.75 | 1.25, 1.75.
  Tensor y = run_one(s);
  CHECK(y.shape() == Dims{1, 1, 1, 2});
  CHECK(values_of<float>(y)[0] == Approx(0.5f));
  CHECK(values_of<float>(y)[1] == Approx(1.5f));
  // output_half_pixel (opset 10's rule): roi [0.5, 2.5], samples 0.75, 1.25 | 1.75, 2.25.
  s.attributes["coordinate_transformation_mode"] = Attribute::of_string("output_half_pixel");
  y = run_one(s);
  CHECK(values_of<float>(y)[0] == Approx(1.0f));
  CHECK(values_of<float>(y)[1] == Approx(2.0f));
  NodeSpec s10 = s;
  s10.opset = 10;
  s10.attributes.erase("coordinate_transformation_mode");
  CHECK(values_of<float>(run_one(s10)) == values_of<float>(y));
  // max: the largest weighted tap. At x = 2.25 (taps 2 and 3 with weights 0.75, 0.25): max(1.5, 0.75) = 1.5.
  s.attributes["mode"] = Attribute::of_string("max");
  CHECK(values_of<float>(run_one(s))[1] == Approx(1.5f));
}

TEST_CASE("RoiAlign refusals", "[interp][detection]") {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  CHECK_THAT(run_error({"RoiAlign", 16, {x, f32({1, 4}, {0, 0, 1, 1}), i64({1}, {1})}}), Catch::Contains("batch index"));
  CHECK_THAT(run_error({"RoiAlign", 16, {x, f32({1, 3}, {0, 0, 1}), i64({1}, {0})}}), Catch::Contains("rois [num_rois, 4]"));
  CHECK_THAT(run_error({"RoiAlign", 16, {x, f32({1, 4}, {0, 0, NAN, 1}), i64({1}, {0})}}), Catch::Contains("not finite"));
  CHECK_THAT(run_error({"RoiAlign", 16, {x, f32({1, 4}, {0, 0, 1e30f, 1e30f}), i64({1}, {0})}}),
             Catch::Contains("too many samples"));
  NodeSpec m{"RoiAlign", 16, {x, f32({1, 4}, {0, 0, 1, 1}), i64({1}, {0})}};
  m.attributes["mode"] = Attribute::of_string("median");
  CHECK_THAT(run_error(m), Catch::Contains("mode"));
}

namespace {

Tensor grid_sample(const Tensor& x, const Tensor& grid, const char* mode, const char* padding, int align) {
  NodeSpec s{"GridSample", 16, {x, grid}};
  s.attributes["mode"] = Attribute::of_string(mode);
  s.attributes["padding_mode"] = Attribute::of_string(padding);
  s.attributes["align_corners"] = Attribute::of_int(align);
  return run_one(s);
}

}  // namespace

TEST_CASE("GridSample: an identity grid reproduces the input in every mode", "[interp][detection]") {
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // align_corners 1: -1 and 1 are the edge pixel centers; x steps by 1, y by 2.
  Tensor grid = f32({1, 2, 3, 2}, {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      INFO(mode << " " << pad);
      std::vector<float> y = values_of<float>(grid_sample(x, grid, mode, pad, 1));
      for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(x.data<float>()[i]).margin(1e-5));
    }
}

TEST_CASE("GridSample: outside points by padding mode; align_corners 0 geometry", "[interp][detection]") {
  Tensor x = f32({1, 1, 1, 2}, {10, 20});
  // x = 1.5 in normalized units with align_corners 0 is pixel 2 (one past the last).
  Tensor outside = f32({1, 1, 1, 2}, {2.0f, 0});
  CHECK(values_of<float>(grid_sample(x, outside, "bilinear", "zeros", 0))[0] == Approx(0.0f));
  CHECK(values_of<float>(grid_sample(x, outside, "bilinear", "border", 0))[0] == Approx(20.0f));
  // Reflection about the outer edge at 1.5 (pixel units): 2.5 -> 0.5, halfway between the pixels.
  CHECK(values_of<float>(grid_sample(x, outside, "bilinear", "reflection", 0))[0] == Approx(15.0f));
  // Normalized 0 is pixel 0.5 (between the two) with align_corners 0.
  Tensor mid = f32({1, 1, 1, 2}, {0, 0});
  CHECK(values_of<float>(grid_sample(x, mid, "bilinear", "zeros", 0))[0] == Approx(15.0f));
  CHECK(values_of<float>(grid_sample(x, mid, "nearest", "zeros", 0))[0] == Approx(10.0f));  // 0.5 rounds to even 0
  // Bicubic between two pixels with border padding: symmetric taps give the mean.
  CHECK(values_of<float>(grid_sample(x, mid, "bicubic", "border", 0))[0] == Approx(15.0f));
  // Reflected twice: align_corners 1 maps 4.0 to pixel 2.5, 1.5 past the edge
  // at 1 -> back to 0.5. Far-off points reflect without overflow.
  Tensor twice = f32({1, 1, 1, 2}, {4.0f, 0});
  CHECK(values_of<float>(grid_sample(x, twice, "bilinear", "reflection", 1))[0] == Approx(15.0f));
  Tensor far = f32({1, 1, 1, 2}, {1e30f, -1e30f});
  const float v = values_of<float>(grid_sample(x, far, "bicubic", "reflection", 0))[0];
  CHECK(std::isfinite(v));
  CHECK(values_of<float>(grid_sample(x, far, "bilinear", "zeros", 0))[0] == 0.0f);
  // Half a pixel outside with zeros: bilinear blends with the zero padding.
  Tensor half = f32({1, 1, 1, 2}, {-1.0f, 0});
  CHECK(values_of<float>(grid_sample(x, half, "bilinear", "zeros", 0))[0] == Approx(5.0f));
}

TEST_CASE("GridSample refusals", "[interp][detection]") {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  CHECK_THAT(run_error({"GridSample", 16, {x, f32({1, 1, 1, 3}, {0, 0, 0})}}), Catch::Contains("grid [n, h_out, w_out, 2]"));
  CHECK_THAT(run_error({"GridSample", 16, {f32({1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 2}, {0, 0})}}),
             Catch::Contains("4-D"));
  NodeSpec m{"GridSample", 16, {x, f32({1, 1, 1, 2}, {0, 0})}};
  m.attributes["padding_mode"] = Attribute::of_string("wrap");
  CHECK_THAT(run_error(m), Catch::Contains("padding_mode"));
}

TEST_CASE("Shrink: soft and hard shrinkage, integers", "[interp][detection]") {
  NodeSpec s{"Shrink", 9, {f32({5}, {-2, -1, 0, 1, 2})}};
  s.attributes["lambd"] = Attribute::of_float(1.5f);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{-2, 0, 0, 0, 2});
  s.attributes["bias"] = Attribute::of_float(1.5f);
  CHECK(values_of<float>(run_one(s)) == std::vector<float>{-0.5f, 0, 0, 0, 0.5f});
  NodeSpec i{"Shrink", 9, {Tensor::from_vector<int32_t>({3}, {-5, 0, 5})}};
  i.attributes["bias"] = Attribute::of_float(2);
  CHECK(values_of<int32_t>(run_one(i)) == std::vector<int32_t>{-3, 0, 3});
}
