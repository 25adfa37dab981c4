#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/qpool.h"
#include "libquant/kernels/pool_max_2d.h"
#include "libquant/kernels/qpool_max.h"
#include "tests/kernels/random_ints.h"

using namespace quant::kernels;

using quant::testing::random_values;

namespace {

PoolGeometry geometry_2d(int64_t n, int64_t c, Dims in, Dims k, Dims s, Dims pb, Dims pe, bool ceil_mode) {
  PoolGeometry g;
  g.batch = n, g.channels = c, g.in_spatial = in, g.kernel = k, g.strides = s, g.dilations = Dims(in.size(), 1);
  g.pads_begin = pb, g.pads_end = pe;
  pool_output_shape(AutoPad::NotSet, ceil_mode, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin,
                    g.pads_end, g.out_spatial);
  return g;
}

// ONNX Runtime's QLinearAveragePool (2-D, qlinear_pool.cc) and the integer
// fixed-point variant, written out.
template <class T>
std::vector<T> naive_average_pool(const PoolGeometry& g, bool include_pad, const QLinearPoolParams& p, RequantMode mode,
                                  const std::vector<T>& x) {
  const int64_t H = g.in_spatial[0], W = g.in_spatial[1], OH = g.out_spatial[0], OW = g.out_spatial[1];
  std::vector<T> y(static_cast<size_t>(g.batch * g.channels * OH * OW));
  for (int64_t c = 0; c < g.batch * g.channels; ++c) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t hs = oh * g.strides[0] - g.pads_begin[0];
      const int64_t he = std::min(hs + g.kernel[0], H);
      hs = std::max<int64_t>(hs, 0);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t ws = ow * g.strides[1] - g.pads_begin[1];
        const int64_t we = std::min(ws + g.kernel[1], W);
        ws = std::max<int64_t>(ws, 0);
        float fsum = 0;
        int64_t isum = 0;
        for (int64_t h = hs; h < he; ++h)
          for (int64_t w = ws; w < we; ++w) {
            const int32_t q = x[static_cast<size_t>((c * H + h) * W + w)];
            fsum += p.x_scale * static_cast<float>(q - p.x_zero_point);
            isum += q - p.x_zero_point;
          }
        const int64_t count = include_pad ? g.kernel[0] * g.kernel[1] : (he - hs) * (we - ws);
        double v;
        if (mode == RequantMode::Float) {
          v = std::nearbyint(fsum / static_cast<float>(count) / p.y_scale + static_cast<float>(p.y_zero_point));
        } else {
          const double m = double(p.x_scale) / (double(p.y_scale) * count);
          v = multiply_by_quantized_multiplier(static_cast<int32_t>(isum), quantize_multiplier(m)) + p.y_zero_point;
        }
        y[static_cast<size_t>((c * OH + oh) * OW + ow)] = static_cast<T>(
            std::clamp<double>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
      }
    }
  }
  return y;
}

}  // namespace

TEST_CASE("qlinear_global_average_pool is MLAS's integer sum and float requantization", "[kernels][qpool]") {
  std::mt19937 rng(6);
  for (int64_t plane : {1, 7, 49, 1000}) {
    const auto x = random_values<uint8_t>(rng, static_cast<size_t>(3 * plane));
    for (int xz : {0, 255, 77}) {
      const float xs = 0.05f, ys = 0.03f;
      const float m = xs / (ys * static_cast<float>(plane));
      for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
        const Requantizer r = make_requantizer(mode, std::vector<float>{m}, 9);
        std::vector<uint8_t> y(3);
        qlinear_global_average_pool<uint8_t>(x.data(), 3, plane, static_cast<uint8_t>(xz), r, y.data());
        // The planes split over threads: the same bytes.
        for (int threads : {2, 3}) {
          std::vector<uint8_t> y_threads(3, 0);
          qlinear_global_average_pool<uint8_t>(x.data(), 3, plane, static_cast<uint8_t>(xz), r, y_threads.data(), threads);
          REQUIRE(y_threads == y);
        }
        for (int64_t c = 0; c < 3; ++c) {
          int32_t acc = 0;
          for (int64_t i = 0; i < plane; ++i) acc += x[static_cast<size_t>(c * plane + i)] - xz;
          REQUIRE(y[static_cast<size_t>(c)] == requantize_one<uint8_t>(acc, r, 0));
          // Within one step of the exact mean.
          const double exact = std::nearbyint(xs * acc / plane / ys) + 9;
          REQUIRE(std::fabs(y[static_cast<size_t>(c)] - std::clamp(exact, 0.0, 255.0)) <= 1);
        }
      }
    }
  }
}

TEST_CASE("qlinear_average_pool equals the written-out algorithms", "[kernels][qpool]") {
  std::mt19937 rng(7);
  struct Case {
    Dims in, k, s, pb, pe;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      {{5, 6}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, false},
      {{7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false},
      {{6, 5}, {3, 2}, {2, 2}, {1, 0}, {2, 1}, true},
      {{4, 4}, {4, 4}, {1, 1}, {0, 0}, {0, 0}, false},  // whole input: ORT's global path
      {{1, 9}, {1, 4}, {1, 3}, {0, 2}, {0, 2}, true},
  };
  for (const Case& cs : cases) {
    const PoolGeometry g = geometry_2d(2, 3, cs.in, cs.k, cs.s, cs.pb, cs.pe, cs.ceil_mode);
    const auto x = random_values<int8_t>(rng, static_cast<size_t>(6 * cs.in[0] * cs.in[1]));
    for (bool include_pad : {false, true}) {
      for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
        const QLinearPoolParams p{0.043f, 0.031f, -7, 3};
        std::vector<int8_t> y(static_cast<size_t>(6 * g.out_spatial[0] * g.out_spatial[1]));
        qlinear_average_pool<int8_t>(g, include_pad, p, mode, x.data(), y.data());
        const auto want = naive_average_pool<int8_t>(g, include_pad, p, mode, x);
        INFO("in " << cs.in[0] << "x" << cs.in[1] << " include_pad=" << include_pad << " fixed=" << (mode == RequantMode::FixedPoint));
        if (mode == RequantMode::Float && cs.k == cs.in) {
          // ONNX Runtime's global path: integer sum, float requantization; at most one step from the float path.
          for (size_t i = 0; i < y.size(); ++i) REQUIRE(std::abs(int{y[i]} - int{want[i]}) <= 1);
        } else {
          REQUIRE(y == want);
        }
      }
    }
  }
}

// The 8-bit MaxPool fast path against the reference max_pool<T>, bit for bit:
// shapes, kernels, strides, pads (windows hanging over every edge, and rows
// of windows wholly in the padding), ceil_mode, both types, 1 and 3 threads;
// 1-D and dilated geometries take the reference path and must still agree.
template <class T>
void check_max_pool_8bit(std::mt19937& rng) {
  // Widths around the 64 bytes of an AVX-512 row vector; kernel 5 with
  // stride 2 reads both split parts at two offsets.
  for (int64_t h : {1, 5, 17})
    for (int64_t w : {1, 7, 16, 37, 64, 65, 130})
      for (int64_t k : {1, 2, 3, 5})
        for (int64_t s : {1, 2, 3})
          for (int64_t pad = 0; pad < k; ++pad)
            for (bool ceil_mode : {false, true}) {
              const PoolGeometry g = geometry_2d(2, 3, {h, w}, {k, k}, {s, s}, {pad, pad}, {k - 1, pad}, ceil_mode);
              if (g.out_spatial[0] < 1 || g.out_spatial[1] < 1) continue;
              const auto x = random_values<T>(rng, static_cast<size_t>(6 * h * w));
              const size_t out = static_cast<size_t>(6 * g.out_spatial[0] * g.out_spatial[1]);
              std::vector<T> want(out);
              max_pool<T>(g, x.data(), want.data(), nullptr, false);
              for (int threads : {1, 3}) {
                std::vector<T> y(out, T{1});
                max_pool_8bit_fast<T>(g, x.data(), y.data(), threads);
                INFO(h << "x" << w << " k " << k << " s " << s << " pad " << pad << " ceil " << ceil_mode << " threads " << threads);
                REQUIRE(y == want);
              }
              // Each vector row path the host has, whichever the dispatch takes.
              for (auto* path : {&max_pool_2d_avx2<T>, &max_pool_2d_avx512<T>}) {
                std::vector<T> y(out, T{1});
                if (!path(g, x.data(), y.data(), 6, {})) continue;
                INFO(h << "x" << w << " k " << k << " s " << s << " pad " << pad << " ceil " << ceil_mode << " (one ISA)");
                REQUIRE(y == want);
              }
            }
  // 3x3/2 windows all inside the plane: the flat path (pool_flat_*), one to
  // four vectors per output row; five planes, the last read only up to the input's end.
  for (int64_t h : {3, 8, 27})
    for (int64_t w : {3, 27, 129, 200, 300}) {
      const PoolGeometry g = geometry_2d(1, 5, {h, w}, {3, 3}, {2, 2}, {0, 0}, {0, 0}, false);
      const auto x = random_values<T>(rng, static_cast<size_t>(5 * h * w));
      std::vector<T> want(static_cast<size_t>(5 * g.out_spatial[0] * g.out_spatial[1]));
      max_pool<T>(g, x.data(), want.data(), nullptr, false);
      INFO(h << "x" << w << " 3x3/2, no padding");
      for (int threads : {1, 3}) {
        std::vector<T> y(want.size(), T{1});
        max_pool_8bit_fast<T>(g, x.data(), y.data(), threads);
        REQUIRE(y == want);
      }
      for (auto* path : {&max_pool_2d_avx2<T>, &max_pool_2d_avx512<T>}) {
        std::vector<T> y(want.size(), T{1});
        if (path(g, x.data(), y.data(), 5, {})) REQUIRE(y == want);
      }
    }
  // The widest window the vector rows take (16 columns, 15 of them padding),
  // stride 2: reads reach furthest past the row there.
  for (int64_t w : {1, 31, 33, 64}) {
    const PoolGeometry g = geometry_2d(1, 2, {3, w}, {2, 16}, {1, 2}, {0, 15}, {1, 15}, false);
    const auto x = random_values<T>(rng, static_cast<size_t>(2 * 3 * w));
    std::vector<T> want(static_cast<size_t>(2 * g.out_spatial[0] * g.out_spatial[1]));
    max_pool<T>(g, x.data(), want.data(), nullptr, false);
    for (auto* path : {&max_pool_2d_avx2<T>, &max_pool_2d_avx512<T>}) {
      std::vector<T> y(want.size(), T{1});
      if (path(g, x.data(), y.data(), 2, {})) REQUIRE(y == want);
    }
  }
  PoolGeometry g;  // 1-D with dilation 2: the reference path
  g.batch = 1, g.channels = 2, g.in_spatial = {11}, g.kernel = {3}, g.strides = {1}, g.dilations = {2};
  g.pads_begin = {1}, g.pads_end = {1};
  pool_output_shape(AutoPad::NotSet, false, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                    g.out_spatial);
  const auto x = random_values<T>(rng, 22);
  std::vector<T> want(static_cast<size_t>(2 * g.out_spatial[0])), y(want.size());
  max_pool<T>(g, x.data(), want.data(), nullptr, false);
  max_pool_8bit_fast<T>(g, x.data(), y.data(), 2);
  REQUIRE(y == want);
}

TEST_CASE("max_pool_8bit_fast matches the reference max_pool", "[kernels][qpool]") {
  std::mt19937 rng(23);
  check_max_pool_8bit<uint8_t>(rng);
  check_max_pool_8bit<int8_t>(rng);
}
