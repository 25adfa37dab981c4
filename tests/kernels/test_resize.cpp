// Resize kernel: coordinate transforms, nearest rounding modes, the cubic
// weights and exclude_outside, extrapolation, and a 2-D separable case.
#include <catch2/catch.hpp>
#include <vector>

#include "libquant/kernels/resize.h"

using quant::kernels::AxisTaps;
using quant::kernels::CoordinateMode;
using quant::kernels::Dims;
using quant::kernels::NearestMode;
using quant::kernels::resize_axis_taps;
using quant::kernels::resize_f32;
using quant::kernels::ResizeMode;
using quant::kernels::ResizeParams;

namespace {

std::vector<float> resize_1d(const ResizeParams& p, std::vector<float> x, int64_t out, double scale,
                             double roi_start = 0, double roi_end = 1, float extrapolation = 0) {
  std::vector<AxisTaps> taps(1);
  resize_axis_taps(p, static_cast<int64_t>(x.size()), out, scale, roi_start, roi_end, taps[0]);
  std::vector<float> y(static_cast<size_t>(out));
  resize_f32(x.data(), Dims{static_cast<int64_t>(x.size())}, taps, extrapolation, y.data());
  return y;
}

}  // namespace

TEST_CASE("resize nearest: half_pixel and the rounding modes", "[kernels][resize]") {
  ResizeParams p;
  CHECK(resize_1d(p, {1, 2}, 4, 2.0) == std::vector<float>{1, 1, 2, 2});
  // asymmetric x/3 for 0..5: 0, .33, .67, 1, 1.33, 1.67 over [1, 2, 3].
  p.coordinates = CoordinateMode::Asymmetric;
  CHECK(resize_1d(p, {1, 2, 3}, 6, 2.0) == std::vector<float>{1, 1, 2, 2, 3, 3});  // x/2: .5 prefers floor
  p.nearest = NearestMode::RoundPreferCeil;
  CHECK(resize_1d(p, {1, 2, 3}, 6, 2.0) == std::vector<float>{1, 2, 2, 3, 3, 3});
  p.nearest = NearestMode::Ceil;
  CHECK(resize_1d(p, {1, 2, 3}, 6, 2.0) == std::vector<float>{1, 2, 2, 3, 3, 3});
  p.nearest = NearestMode::Floor;
  CHECK(resize_1d(p, {1, 2, 3}, 6, 2.0) == std::vector<float>{1, 1, 2, 2, 3, 3});
  // Simple (Resize-10): ceil when shrinking: x/0.5 = 0, 2 -> [1, 3] of [1, 2, 3, 4].
  p.nearest = NearestMode::Simple;
  CHECK(resize_1d(p, {1, 2, 3, 4}, 2, 0.5) == std::vector<float>{1, 3});
}

TEST_CASE("resize linear: half_pixel clamps, align_corners uses scale * length", "[kernels][resize]") {
  ResizeParams p;
  p.mode = ResizeMode::Linear;
  CHECK(resize_1d(p, {1, 2}, 4, 2.0) == std::vector<float>{1, 1.25f, 1.75f, 2});
  p.coordinates = CoordinateMode::AlignCorners;
  CHECK(resize_1d(p, {1, 2}, 3, 1.5) == std::vector<float>{1, 1.5f, 2});
  // 4 values scaled by 0.6: 2 outputs, output 1 at 3 / (2.4 - 1).
  auto y = resize_1d(p, {1, 2, 3, 4}, 2, 0.6);
  CHECK(y[0] == 1);
  CHECK(y[1] == Approx(1 + 3 / 1.4));
}

TEST_CASE("resize cubic weights and exclude_outside", "[kernels][resize]") {
  ResizeParams p;
  p.mode = ResizeMode::Cubic;
  p.coordinates = CoordinateMode::Asymmetric;
  AxisTaps t;
  // scale 2/3: output 1 sits at 1.5, between taps 0..3 with Keys weights for t = 0.5, a = -0.75.
  resize_axis_taps(p, 4, 2, 2.0 / 3.0, 0, 1, t);
  REQUIRE(t.count[1] == 4);
  CHECK(t.index[4] == 0);
  CHECK(t.weight[4] == Approx(-0.09375));
  CHECK(t.weight[5] == Approx(0.59375));
  CHECK(t.weight[6] == Approx(0.59375));
  CHECK(t.weight[7] == Approx(-0.09375));
  // At 0.5 the first tap (-1) is outside: by default it reads the edge,
  // with exclude_outside it is dropped and the rest renormalised.
  resize_axis_taps(p, 4, 2, 2.0, 0, 1, t);  // output 1 at 0.5
  CHECK(t.count[1] == 4);
  CHECK(t.index[4] == 0);  // clamped edge
  p.exclude_outside = true;
  resize_axis_taps(p, 4, 2, 2.0, 0, 1, t);
  REQUIRE(t.count[1] == 3);
  CHECK(t.index[4] == 0);
  CHECK(t.weight[4] == Approx(0.59375 / 1.09375));
  CHECK(t.weight[6] == Approx(-0.09375 / 1.09375));
}

TEST_CASE("resize tf_crop_and_resize extrapolates outside the roi", "[kernels][resize]") {
  ResizeParams p;
  p.mode = ResizeMode::Linear;
  p.coordinates = CoordinateMode::TfCropAndResize;
  // roi [0, 2] over 3 values, 3 outputs: coordinates 0, 2, 4 (outside).
  CHECK(resize_1d(p, {1, 2, 3}, 3, 1.0, 0.0, 2.0, -5.0f) == std::vector<float>{1, 3, -5});
}

TEST_CASE("resize_f32 2-D bilinear is separable", "[kernels][resize]") {
  ResizeParams p;
  p.mode = ResizeMode::Linear;
  p.coordinates = CoordinateMode::AlignCorners;
  std::vector<AxisTaps> taps(2);
  resize_axis_taps(p, 2, 3, 1.5, 0, 1, taps[0]);
  resize_axis_taps(p, 2, 3, 1.5, 0, 1, taps[1]);
  const std::vector<float> x = {0, 2, 4, 6};
  std::vector<float> y(9);
  resize_f32(x.data(), Dims{2, 2}, taps, 0, y.data());
  CHECK(y == std::vector<float>{0, 1, 2, 2, 3, 4, 4, 5, 6});
}
