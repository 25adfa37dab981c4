// The depthwise plane kernels of conv_depthwise_rows.h: against the
// reference conv_f32 on one channel, and the AVX2 and AVX-512 paths against
// each other bit for bit where the host runs both.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_depthwise_rows.h"

using namespace quant::kernels;
using quant::kernels::detail::DepthwisePlane;

namespace {

struct Shape {
  int64_t in_h, in_w, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom,
      pad_right;
};

ConvGeometry one_channel(const Shape& s) {
  ConvGeometry g;
  g.batch = 1;
  g.in_channels = g.out_channels = g.group = 1;
  g.in_spatial = {s.in_h, s.in_w};
  g.kernel = {s.kernel_h, s.kernel_w};
  g.strides = {s.stride_h, s.stride_w};
  g.dilations = {s.dilation_h, s.dilation_w};
  g.pads_begin = {s.pad_top, s.pad_left};
  g.pads_end = {s.pad_bottom, s.pad_right};
  resolve_conv_pads(AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                    g.out_spatial);
  return g;
}

}  // namespace

TEST_CASE("depthwise plane kernels: the reference's sums, the same bits on AVX2 and AVX-512", "[kernels][conv]") {
  // efficientnet's 5x5 at 14, 7 and 28 (strides 1 and 2), 3x3 and 7x7,
  // 1 x 5 and 5 x 1, dilation, padding wider than the map, stride 3 rows,
  // widths around the 8- and 16-lane vectors (rows of 1 to 4 vectors, and
  // 5: a tile of four and one), 1 to 9 rows (tiles of four and two rows and
  // their remainders).
  const std::vector<Shape> shapes = {
      {14, 14, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},  {7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},
      {28, 28, 5, 5, 2, 2, 1, 1, 1, 1, 2, 2},  {14, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},
      {9, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   {5, 40, 7, 7, 1, 2, 1, 1, 3, 3, 3, 3},
      {6, 33, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2},   {8, 9, 5, 1, 1, 1, 1, 1, 2, 0, 2, 0},
      {10, 23, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3},  {3, 4, 5, 5, 1, 1, 1, 1, 4, 6, 4, 6},
      {11, 16, 3, 5, 3, 2, 1, 1, 1, 2, 1, 2},  {4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 70, 5, 5, 1, 2, 1, 2, 2, 4, 2, 4},   {1, 8, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0},
  };
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const IsaCap best = detail::depthwise_plane_level();
  int compared = 0;
  for (const Shape& s : shapes) {
    const ConvGeometry g = one_channel(s);
    const int64_t out_h = g.out_spatial[0], out_w = g.out_spatial[1];
    std::vector<float> x(size_t(s.in_h * s.in_w)), w(size_t(s.kernel_h * s.kernel_w));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();  // passes the clamp
    const float bias = dist(rng);
    std::vector<float> want(size_t(out_h * out_w));
    conv_f32(g, x.data(), w.data(), &bias, want.data());
    for (bool clamp : {false, true}) {
      std::vector<float> got[2];
      int level = 0;
      for (IsaCap isa : {IsaCap::Avx2, IsaCap::Avx512}) {
        std::vector<float> y(want.size() + 1, 99.0f);  // one past the end: never written
        const DepthwisePlane p{x.data(), y.data(), w.data(), s.in_h, s.in_w, out_h, out_w, s.kernel_h, s.kernel_w,
                               s.stride_h, s.stride_w, s.dilation_h, s.dilation_w, s.pad_top, s.pad_left, bias,
                               clamp, -0.5f, 0.7f};
        REQUIRE(detail::depthwise_plane_fits(p));
        if (!detail::depthwise_plane(isa, p)) continue;
        INFO("shape " << s.in_h << "x" << s.in_w << " k " << s.kernel_h << "x" << s.kernel_w << " s " << s.stride_h
                      << "," << s.stride_w << " clamp " << clamp << " isa " << isa_cap_name(isa));
        REQUIRE(y.back() == 99.0f);
        for (size_t i = 0; i < want.size(); ++i) {
          const float ref = clamp && !std::isnan(want[i]) ? std::clamp(want[i], -0.5f, 0.7f) : want[i];
          if (std::isnan(ref)) {
            REQUIRE(std::isnan(y[i]));
          } else {
            REQUIRE(std::abs(y[i] - ref) <= 1e-5f * float(s.kernel_h * s.kernel_w + 2));
          }
        }
        y.pop_back();
        got[level++] = std::move(y);
      }
      if (level == 2) {
        ++compared;
        // NaN == NaN fails: compare bit patterns.
        REQUIRE(std::memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)) == 0);
      }
    }
  }
  if (best == IsaCap::Avx512) REQUIRE(compared == 2 * int(shapes.size()));
}
