#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/pool.h"

using quant::kernels::AutoPad;
using quant::kernels::average_pool_f32;
using quant::kernels::Dims;
using quant::kernels::max_pool_f32;
using quant::kernels::pool_output_shape;
using quant::kernels::PoolGeometry;

namespace {

PoolGeometry make_pool(int64_t batch, int64_t channels, Dims in, Dims kernel, Dims strides, Dims pads_begin,
                       Dims pads_end, bool ceil_mode = false, Dims dilations = {}) {
  PoolGeometry g;
  g.batch = batch;
  g.channels = channels;
  g.in_spatial = in;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = dilations.empty() ? Dims(in.size(), 1) : dilations;
  g.pads_begin = pads_begin;
  g.pads_end = pads_end;
  pool_output_shape(AutoPad::NotSet, ceil_mode, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin,
                    g.pads_end, g.out_spatial);
  return g;
}

std::vector<float> iota_from(int n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + float(i);
  return v;
}

}  // namespace

TEST_CASE("pool_output_shape", "[kernels][pool]") {
  Dims pb, pe, out;
  SECTION("floor vs ceil") {
    pb = {0};
    pe = {0};
    pool_output_shape(AutoPad::NotSet, false, Dims{5}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});
    pool_output_shape(AutoPad::NotSet, true, Dims{5}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{3});
  }
  SECTION("ceil_mode drops a window that would start in the end padding") {
    // in 3, k 2, s 2, pads 1/1: ceil((3+2-2)/2)+1 = 3, but window 2 would
    // start at index 3 = in + pad_begin - 1 + 1, i.e. in the end padding.
    pb = {1};
    pe = {1};
    pool_output_shape(AutoPad::NotSet, true, Dims{3}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});
    pool_output_shape(AutoPad::NotSet, false, Dims{3}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});
    // in 6, k 3, s 2, pads 1/1: ceil(5/2)+1 = 4 and the last window starts at 5 (inside): kept.
    pool_output_shape(AutoPad::NotSet, true, Dims{6}, Dims{3}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{4});
  }
  SECTION("VALID honours ceil_mode") {
    pb = {7};
    pe = {7};
    pool_output_shape(AutoPad::Valid, false, Dims{5}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});
    CHECK(pb == Dims{0});
    CHECK(pe == Dims{0});
    pool_output_shape(AutoPad::Valid, true, Dims{5}, Dims{2}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{3});
    pool_output_shape(AutoPad::Valid, true, Dims{5}, Dims{1}, Dims{3}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});  // ceil gives 3, but a window starting at 6 lies outside
  }
  SECTION("SAME ignores ceil_mode") {
    for (bool ceil_mode : {false, true}) {
      pool_output_shape(AutoPad::SameUpper, ceil_mode, Dims{4, 5}, Dims{2, 3}, Dims{1, 2}, Dims{1, 1}, pb, pe, out);
      CHECK(out == Dims{4, 3});
      CHECK(pb == Dims{0, 1});
      CHECK(pe == Dims{1, 1});
      pool_output_shape(AutoPad::SameLower, ceil_mode, Dims{4, 5}, Dims{2, 3}, Dims{1, 2}, Dims{1, 1}, pb, pe, out);
      CHECK(out == Dims{4, 3});
      CHECK(pb == Dims{1, 1});
      CHECK(pe == Dims{0, 1});
    }
  }
  SECTION("dilation") {
    pb = {0};
    pe = {0};
    pool_output_shape(AutoPad::NotSet, false, Dims{7}, Dims{3}, Dims{1}, Dims{2}, pb, pe, out);
    CHECK(out == Dims{3});
  }
}

TEST_CASE("max_pool_f32", "[kernels][pool]") {
  SECTION("2x2 stride 2") {
    const std::vector<float> x = iota_from(16, 1);
    const PoolGeometry g = make_pool(1, 1, {4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0});
    std::vector<float> y(4);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y == std::vector<float>{6, 8, 14, 16});
  }
  SECTION("padding never wins the max") {
    std::vector<float> x = iota_from(16, 1);
    for (float& v : x) v = -v;
    const PoolGeometry g = make_pool(1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1});
    REQUIRE(g.out_spatial == Dims{4, 4});
    std::vector<float> y(16);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y[0] == -1.0f);
    CHECK(y[5] == -1.0f);
    CHECK(y[12] == -9.0f);
    CHECK(y[15] == -11.0f);
  }
  SECTION("ceil_mode keeps the partial last window") {
    const std::vector<float> x = {1, 5, 2, 4, 3};
    PoolGeometry g = make_pool(1, 1, {1, 5}, {1, 2}, {1, 2}, {0, 0}, {0, 0}, true);
    REQUIRE(g.out_spatial == Dims{1, 3});
    std::vector<float> y(3);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y == std::vector<float>{5, 4, 3});
    g = make_pool(1, 1, {1, 5}, {1, 2}, {1, 2}, {0, 0}, {0, 0}, false);
    REQUIRE(g.out_spatial == Dims{1, 2});
    std::vector<float> y2(2);
    max_pool_f32(g, x.data(), y2.data());
    CHECK(y2 == std::vector<float>{5, 4});
  }
  SECTION("1-D dilation") {
    const std::vector<float> x = {1, 9, 2, 8, 3, 7, 4};
    const PoolGeometry g = make_pool(1, 1, {7}, {2}, {1}, {0}, {0}, false, {3});
    REQUIRE(g.out_spatial == Dims{4});
    std::vector<float> y(4);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y == std::vector<float>{8, 9, 7, 8});
  }
  SECTION("3-D, several planes") {
    std::vector<float> x = iota_from(32, 1);  // [2,2,2,2,2]
    x[3] = 100;                               // plane 0
    const PoolGeometry g = make_pool(2, 2, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0});
    std::vector<float> y(4);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y == std::vector<float>{100, 16, 24, 32});
  }
  SECTION("a window entirely in padding yields lowest()") {
    const std::vector<float> x = {3};
    const PoolGeometry g = make_pool(1, 1, {1}, {1}, {1}, {1}, {0});
    REQUIRE(g.out_spatial == Dims{2});
    std::vector<float> y(2);
    max_pool_f32(g, x.data(), y.data());
    CHECK(y[0] == std::numeric_limits<float>::lowest());
    CHECK(y[1] == 3.0f);
  }
}

TEST_CASE("average_pool_f32", "[kernels][pool]") {
  const std::vector<float> x9 = iota_from(9, 1);
  SECTION("no padding") {
    const PoolGeometry g = make_pool(1, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0});
    std::vector<float> y(4);
    average_pool_f32(g, false, x9.data(), y.data());
    CHECK(y == std::vector<float>{3, 4, 6, 7});
  }
  SECTION("count_include_pad") {
    const PoolGeometry g = make_pool(1, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1});
    std::vector<float> y(9);
    average_pool_f32(g, false, x9.data(), y.data());
    CHECK(y[0] == 3.0f);  // 12 / 4
    CHECK(y[1] == 3.5f);  // 21 / 6
    CHECK(y[4] == 5.0f);  // 45 / 9
    CHECK(y[8] == 7.0f);  // 28 / 4
    average_pool_f32(g, true, x9.data(), y.data());
    CHECK(y[0] == Approx(12.0 / 9));
    CHECK(y[1] == Approx(21.0 / 9));
    CHECK(y[4] == 5.0f);
    CHECK(y[8] == Approx(28.0 / 9));
  }
  SECTION("ceil_mode: taps past the end padding are not counted") {
    const std::vector<float> x = {1, 2, 3, 4, 5, 6};
    const PoolGeometry g = make_pool(1, 1, {6}, {3}, {2}, {1}, {1}, true);
    REQUIRE(g.out_spatial == Dims{4});
    std::vector<float> y(4);
    average_pool_f32(g, true, x.data(), y.data());
    CHECK(y == std::vector<float>{1, 3, 5, 3});  // last: 6 / 2 (tap 6 is end pad, tap 7 beyond)
    average_pool_f32(g, false, x.data(), y.data());
    CHECK(y == std::vector<float>{1.5f, 3, 5, 6});
  }
  SECTION("ceil_mode without pads") {
    const std::vector<float> x = {1, 2, 3, 4, 5};
    const PoolGeometry g = make_pool(1, 1, {5}, {2}, {2}, {0}, {0}, true);
    REQUIRE(g.out_spatial == Dims{3});
    std::vector<float> y(3);
    average_pool_f32(g, true, x.data(), y.data());
    CHECK(y == std::vector<float>{1.5f, 3.5f, 5});
  }
  SECTION("dilation (AveragePool opset 19)") {
    const std::vector<float> x = {1, 2, 3, 4, 5};
    const PoolGeometry g = make_pool(1, 1, {5}, {2}, {1}, {0}, {0}, false, {2});
    std::vector<float> y(3);
    average_pool_f32(g, false, x.data(), y.data());
    CHECK(y == std::vector<float>{2, 3, 4});
  }
  SECTION("batch and channels") {
    const std::vector<float> x = iota_from(16, 1);  // [2,2,2,2]
    const PoolGeometry g = make_pool(2, 2, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0});
    std::vector<float> y(4);
    average_pool_f32(g, false, x.data(), y.data());
    CHECK(y == std::vector<float>{2.5f, 6.5f, 10.5f, 14.5f});
  }
}

TEST_CASE("global pools", "[kernels][pool]") {
  const std::vector<float> x = {1, 2, 3, 4, -5, -6, -7, -8, 0, 0, 0, 1};
  std::vector<float> y(3);
  quant::kernels::global_average_pool_f32(x.data(), 1, 3, 4, y.data());
  CHECK(y == std::vector<float>{2.5f, -6.5f, 0.25f});
  quant::kernels::global_max_pool_f32(x.data(), 3, 1, 4, y.data());
  CHECK(y == std::vector<float>{4, -5, 1});
}

TEST_CASE("global average pool on threads: every plane as one thread sums it", "[kernels][pool]") {
  // 74 planes (eight at a time, then 2 alone); maps of 1 to 203 values,
  // around the vector path's blocks of 8; magnitudes from 2^-8 to 2^8, so
  // that another order of the adds gives other bits.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::uniform_int_distribution<int> exponent(-8, 8);
  const int64_t N = 2, C = 37;
  for (int64_t spatial : {1, 7, 8, 9, 49, 196, 203}) {
    std::vector<float> x(static_cast<size_t>(N * C * spatial));
    for (float& v : x) v = std::ldexp(dist(rng), exponent(rng));
    std::vector<float> want(static_cast<size_t>(N * C));
    for (int64_t p = 0; p < N * C; ++p) {
      float sum = 0.0f;
      for (int64_t i = 0; i < spatial; ++i) sum += x[static_cast<size_t>(p * spatial + i)];
      want[static_cast<size_t>(p)] = sum / static_cast<float>(spatial);
    }
    for (int threads : {1, 2, 3, 8}) {
      std::vector<float> y(want.size(), 99.0f);
      quant::kernels::global_average_pool_f32(x.data(), N, C, spatial, y.data(), threads);
      INFO("spatial " << spatial << ", threads " << threads);
      CHECK(y == want);
    }
  }
}

TEST_CASE("max_pool Indices row- and column-major, int8", "[kernels][pool]") {
  // 3x3 input, 2x2 window, stride 1: maxima at the bottom-right of each window.
  const PoolGeometry g = make_pool(1, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0});
  const std::vector<int8_t> x = {1, 2, 3, 4, 5, 6, 7, 8, -9};
  std::vector<int8_t> y(4);
  std::vector<int64_t> idx(4);
  quant::kernels::max_pool<int8_t>(g, x.data(), y.data(), idx.data(), false);
  CHECK(y == std::vector<int8_t>{5, 6, 8, 8});
  CHECK(idx == std::vector<int64_t>{4, 5, 7, 7});
  quant::kernels::max_pool<int8_t>(g, x.data(), y.data(), idx.data(), true);
  // Column-major: (h, w) -> h + 3 * w.
  CHECK(idx == std::vector<int64_t>{4, 7, 5, 5});
  // A second plane offsets the indices by the plane size.
  const PoolGeometry g2 = make_pool(2, 1, {2}, {2}, {1}, {0}, {0});
  const std::vector<float> xf = {1, 0, 0, 1};
  std::vector<float> yf(2);
  std::vector<int64_t> i2(2);
  quant::kernels::max_pool<float>(g2, xf.data(), yf.data(), i2.data(), false);
  CHECK(i2 == std::vector<int64_t>{0, 3});
}

TEST_CASE("lp_pool_f32, global_lp_pool_f32, max_unpool_f32", "[kernels][pool]") {
  const PoolGeometry g = make_pool(1, 1, {3}, {2}, {1}, {1}, {0});
  const std::vector<float> x = {3, -4, 12};
  std::vector<float> y(3);
  quant::kernels::lp_pool_f32(g, 2.0f, x.data(), y.data());
  CHECK(y[0] == Approx(3.0f));   // padding counts as 0
  CHECK(y[1] == Approx(5.0f));
  CHECK(y[2] == Approx(std::sqrt(160.0f)));
  float gy = 0;
  quant::kernels::global_lp_pool_f32(x.data(), 1, 1, 3, 1.0f, &gy);
  CHECK(gy == Approx(19.0f));
  const std::vector<float> v = {5, 7};
  const std::vector<int64_t> at = {3, 0};
  std::vector<float> out(4, -1.0f);
  quant::kernels::max_unpool_f32(v.data(), at.data(), 2, out.data(), 4);
  CHECK(out == std::vector<float>{7, 0, 0, 5});
}
