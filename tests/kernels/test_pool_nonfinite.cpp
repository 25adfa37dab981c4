// NaN and infinities through the float pools: the reference kernels follow
// the rules of pool.h (MaxPool/GlobalMaxPool as ONNX Runtime's std::max from
// lowest(); AveragePool/GlobalAveragePool as IEEE sums), and every other path
// (portable 2-D, AVX2, AVX-512, threaded) gives the same bits on inputs dense with
// NaN, +-inf and windows made only of them (GlobalAveragePool against a sum
// written in this test: the same bits up to which NaN, see same_values).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/pool.h"
#include "libquant/kernels/pool_fast.h"
#include "libquant/kernels/pool_max_2d.h"
#include "tests/skip.h"

using namespace quant::kernels;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kLowest = std::numeric_limits<float>::lowest();

PoolGeometry geometry(int64_t planes, Dims in, Dims kernel, Dims strides, Dims pads_begin, Dims pads_end,
                      Dims dilations = {}) {
  PoolGeometry g;
  g.batch = 1;
  g.channels = planes;
  g.in_spatial = std::move(in);
  g.kernel = std::move(kernel);
  g.strides = std::move(strides);
  g.dilations = dilations.empty() ? Dims(g.in_spatial.size(), 1) : std::move(dilations);
  g.pads_begin = std::move(pads_begin);
  g.pads_end = std::move(pads_end);
  pool_output_shape(AutoPad::NotSet, false, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                    g.out_spatial);
  return g;
}

int64_t count(const PoolGeometry& g, const Dims& spatial) {
  int64_t n = g.batch * g.channels;
  for (int64_t d : spatial) n *= d;
  return n;
}

// Half the values NaN, +inf or -inf, in runs, so that whole windows hold
// only NaN, only -inf or a mix; the rest finite with ties and signed zeros.
std::vector<float> nonfinite_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const float specials[] = {kNaN, kNaN, kInf, -kInf, -kInf, 0.0f, -0.0f, 2.0f};
  std::vector<float> v(static_cast<size_t>(n));
  float run = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % 5 == 0) run = specials[rng() % 8];
    v[i] = rng() % 2 ? run : static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.5f;
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Equal bits, except that any NaN equals any NaN: which NaN an addition
// returns depends on the order of its operands, and compilers commute additions
// (clang at -O1 does in the sums below), so a NaN sum's sign is no property of
// a kernel. The design promises "NaN" for AveragePool (DESIGN.md), not which.
bool same_values(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  }
  return true;
}

std::vector<float> max_pool_ref(const PoolGeometry& g, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(count(g, g.out_spatial)));
  max_pool_f32(g, x.data(), y.data());
  return y;
}

}  // namespace

TEST_CASE("MaxPool and GlobalMaxPool skip NaN; all-NaN and all -inf windows give lowest()", "[kernels][pool][nonfinite]") {
  // Four 1x2 windows (stride 2) over one row, and the same as four planes of GlobalMaxPool.
  const std::vector<float> x = {kNaN, 1.0f, kNaN, kNaN, -kInf, -kInf, kInf, kNaN};
  const std::vector<float> want = {1.0f, kLowest, kLowest, kInf};
  const PoolGeometry g = geometry(1, {1, 8}, {1, 2}, {1, 2}, {0, 0}, {0, 0});
  CHECK(same_bits(max_pool_ref(g, x), want));
  std::vector<float> y(4);
  global_max_pool_f32(x.data(), 1, 4, 2, y.data());
  CHECK(same_bits(y, want));
}

TEST_CASE("AveragePool and GlobalAveragePool follow IEEE sums", "[kernels][pool][nonfinite]") {
  const std::vector<float> x = {kNaN, 1.0f, kInf, 1.0f, kInf, -kInf, -kInf, 3.0f};
  const PoolGeometry g = geometry(1, {1, 8}, {1, 2}, {1, 2}, {0, 0}, {0, 0});
  std::vector<float> y(4);
  average_pool_f32(g, false, x.data(), y.data());
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == kInf);
  CHECK(std::isnan(y[2]));
  CHECK(y[3] == -kInf);
  std::vector<float> global(4);
  global_average_pool_f32(x.data(), 1, 4, 2, global.data());
  CHECK(same_bits(global, y));
}

TEST_CASE("Every MaxPool path equals the reference on NaN and infinities", "[kernels][pool][nonfinite]") {
  struct Case {
    Dims in, kernel, strides, pads_begin, pads_end;
  };
  const Case cases[] = {
      {{9, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},   // stride 2: AVX-512's split columns
      {{7, 35}, {2, 5}, {1, 1}, {0, 2}, {1, 2}},   // stride 1
      {{6, 20}, {2, 1}, {2, 1}, {0, 0}, {0, 0}},   // one column per window
      {{5, 24}, {3, 17}, {1, 1}, {1, 8}, {1, 8}},  // wider than AVX-512 takes
      // 3x3/2 windows inside the rows: the flat folds, which read on into
      // the next row (the last rows of the last plane cannot: edge loads).
      {{9, 27}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},
      {{7, 16}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},   // a column no window reads
      {{11, 55}, {3, 3}, {2, 2}, {0, 0}, {1, 0}},  // 27 outputs per row: two AVX-512 vectors
      // Whole planes of 3x3/2 windows inside the plane (pool_flat_*): the
      // carried row fold in registers (one or two vectors per row) or in
      // memory (more), a row left unread at the bottom.
      {{10, 111}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},  // 55 outputs per row
      {{8, 70}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},    // 34
      {{5, 7}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},     // 3
      // Nine output rows: 3 threads pool bands of rows (pool_fast.cpp's
      // by_rows), which read on into the rows after them.
      {{20, 41}, {3, 3}, {2, 2}, {0, 0}, {0, 0}},
  };
  for (const Case& c : cases) {
    // Five planes: the flat path's last plane reads no further than the
    // input's end, the ones before it read on into the next plane.
    const PoolGeometry g = geometry(5, c.in, c.kernel, c.strides, c.pads_begin, c.pads_end);
    const auto x = nonfinite_values(count(g, g.in_spatial), static_cast<uint32_t>(count(g, g.in_spatial)));
    const auto want = max_pool_ref(g, x);
    INFO("input " << c.in[0] << "x" << c.in[1] << ", window " << c.kernel[0] << "x" << c.kernel[1]);
    // The reference itself: no NaN ever comes out, all-NaN windows give lowest().
    for (float v : want) CHECK_FALSE(std::isnan(v));
    std::vector<float> y(want.size(), 42.0f);
    max_pool_2d_f32_portable(g, x.data(), y.data());
    CHECK(same_bits(y, want));
    for (int threads : {1, 3}) {
      std::fill(y.begin(), y.end(), 42.0f);
      max_pool_f32_fast(g, x.data(), y.data(), threads);
      CHECK(same_bits(y, want));
    }
    for (auto* path : {&max_pool_2d_avx2<float>, &max_pool_2d_avx512<float>}) {
      std::fill(y.begin(), y.end(), 42.0f);
      if (path(g, x.data(), y.data(), g.channels, {})) CHECK(same_bits(y, want));
    }
  }
}

TEST_CASE("The AVX-512 and AVX2 MaxPool paths keep NaN out like the reference", "[kernels][pool][nonfinite]") {
  const PoolGeometry g = geometry(2, {4, 18}, {2, 3}, {1, 1}, {0, 1}, {0, 1});
  if (!max_pool_2d_avx2<float>(g, nullptr, nullptr, 0)) QTOOL_SKIP("no AVX2 on this host");
  // NaN first, last and alone in windows, next to +-inf.
  std::vector<float> x(static_cast<size_t>(count(g, g.in_spatial)), kNaN);
  for (size_t i = 0; i < x.size(); i += 7) x[i] = -kInf;
  for (size_t i = 3; i < x.size(); i += 11) x[i] = 1.5f;
  x[20] = kInf;
  for (auto* path : {&max_pool_2d_avx2<float>, &max_pool_2d_avx512<float>}) {
    std::vector<float> y(static_cast<size_t>(count(g, g.out_spatial)), 42.0f);
    if (path(g, x.data(), y.data(), g.channels, {})) CHECK(same_bits(y, max_pool_ref(g, x)));
  }
}

TEST_CASE("Every AveragePool and GlobalAveragePool path equals the reference on NaN and infinities",
          "[kernels][pool][nonfinite]") {
  const PoolGeometry g = geometry(4, {9, 13}, {3, 2}, {2, 1}, {1, 0}, {1, 1});
  const auto x = nonfinite_values(count(g, g.in_spatial), 5);
  for (bool include_pad : {false, true}) {
    std::vector<float> want(static_cast<size_t>(count(g, g.out_spatial)));
    average_pool_f32(g, include_pad, x.data(), want.data());
    for (int threads : {1, 3}) {
      std::vector<float> y(want.size(), 42.0f);
      average_pool_f32_fast(g, include_pad, x.data(), y.data(), threads);
      CHECK(same_bits(y, want));
    }
  }
  const int64_t planes = 4, spatial = 9 * 13;
  std::vector<float> want(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p) {
    float sum = 0.0f;
    for (int64_t i = 0; i < spatial; ++i) sum += x[static_cast<size_t>(p * spatial + i)];
    want[static_cast<size_t>(p)] = sum / static_cast<float>(spatial);
  }
  for (int threads : {1, 2, 3}) {
    std::vector<float> y(want.size(), 42.0f);
    global_average_pool_f32(x.data(), 1, planes, spatial, y.data(), threads);
    CHECK(same_values(y, want));
  }
}
