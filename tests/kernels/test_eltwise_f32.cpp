// The fast element-wise and pooling paths against the reference kernels, bit
// for bit (NaN, -0 and infinities included), for several thread counts.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/eltwise_f32.h"
#include "libquant/kernels/pool.h"
#include "libquant/kernels/pool_fast.h"
#include "libquant/kernels/pool_max_2d.h"
#include "libquant/kernels/unary.h"

using namespace quant::kernels;

namespace {

// Random values with NaN, +-inf, +-0 and exact ties sprinkled in.
std::vector<float> awkward_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1.0f, 6.0f};
  for (auto& x : v) x = rng() % 11 == 0 ? specials[rng() % 7] : normal(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // Empty vectors may hold null data, which memcmp must not see.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("clamp_f32 equals the reference Relu and Clip bit for bit", "[kernels][eltwise_f32]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 7, 8, 13, 40000}) {
    const auto x = awkward_values(n, static_cast<uint32_t>(n) + 1);
    for (int threads : {1, 2, 3}) {
      std::vector<float> relu_ref(x.size()), relu(x.size());
      unary<float>(UnaryOp::Relu, x.data(), relu_ref.data(), n, {});
      clamp_f32(x.data(), relu.data(), n, 0.0f, inf, threads);
      CHECK(same_bits(relu, relu_ref));
      std::vector<float> clip_ref(x.size()), clip_fast(x.size());
      clip<float>(x.data(), clip_ref.data(), n, -0.0f, 6.0f);
      clamp_f32(x.data(), clip_fast.data(), n, -0.0f, 6.0f, threads);
      CHECK(same_bits(clip_fast, clip_ref));
      // In place, as a fused Add -> Clip fallback uses it.
      std::vector<float> in_place = x;
      clamp_f32(in_place.data(), in_place.data(), n, -1.5f, 2.5f, threads);
      clip<float>(x.data(), clip_ref.data(), n, -1.5f, 2.5f);
      CHECK(same_bits(in_place, clip_ref));
    }
  }
}

TEST_CASE("add_f32 equals the reference Add, with and without a clamp", "[kernels][eltwise_f32]") {
  for (int64_t n : {0, 3, 4, 9, 33333}) {
    const auto a = awkward_values(n, 7), b = awkward_values(n, 8);
    const Dims shape{n};
    std::vector<float> ref(static_cast<size_t>(n)), relu_ref(static_cast<size_t>(n));
    binary_broadcast<float>(BinaryOp::Add, a.data(), shape, b.data(), shape, ref.data(), shape);
    unary<float>(UnaryOp::Relu, ref.data(), relu_ref.data(), n, {});
    for (int threads : {1, 2}) {
      std::vector<float> y(static_cast<size_t>(n)), y_relu(static_cast<size_t>(n));
      add_f32(a.data(), b.data(), y.data(), n, false, 0, 0, threads);
      CHECK(same_bits(y, ref));
      add_f32(a.data(), b.data(), y_relu.data(), n, true, 0.0f, std::numeric_limits<float>::infinity(), threads);
      CHECK(same_bits(y_relu, relu_ref));
    }
  }
}

TEST_CASE("fast max and average pooling equal the reference kernels", "[kernels][eltwise_f32][pool]") {
  struct Case {
    Dims in, kernel, strides, pads_begin, pads_end, dilations;
    bool ceil_mode;
  };
  const Case cases[] = {
      {{12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false},  // ResNet's stem pool
      {{9, 67}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false},   // rows of several AVX-512 vectors
      {{6, 40}, {2, 5}, {3, 1}, {1, 2}, {0, 2}, {1, 1}, true},    // stride 1, window 5 wide, rows skipped
      {{5, 33}, {1, 16}, {1, 2}, {0, 15}, {0, 15}, {1, 1}, false},  // the widest window, all in padding at the ends
      {{4, 20}, {2, 3}, {1, 3}, {0, 1}, {0, 1}, {1, 1}, false},  // column stride 3: the scalar path
      {{7, 9}, {2, 3}, {1, 2}, {0, 1}, {1, 0}, {1, 1}, true},
      {{5, 5}, {5, 5}, {1, 1}, {2, 2}, {2, 2}, {1, 1}, false},
      {{9, 8}, {3, 2}, {2, 3}, {1, 0}, {0, 1}, {2, 1}, false},  // dilated: the generic path
      {{11}, {3}, {2}, {1}, {1}, {1}, true},                    // 1-D
      {{4, 5, 6}, {2, 2, 3}, {2, 1, 2}, {0, 1, 1}, {1, 0, 1}, {1, 1, 1}, false},
  };
  for (const Case& c : cases) {
    PoolGeometry g;
    g.batch = 2;
    g.channels = 3;
    g.in_spatial = c.in;
    g.kernel = c.kernel;
    g.strides = c.strides;
    g.dilations = c.dilations;
    g.pads_begin = c.pads_begin;
    g.pads_end = c.pads_end;
    pool_output_shape(AutoPad::NotSet, c.ceil_mode, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin,
                      g.pads_end, g.out_spatial);
    int64_t in_count = g.batch * g.channels, out_count = g.batch * g.channels;
    for (int64_t d : g.in_spatial) in_count *= d;
    for (int64_t d : g.out_spatial) out_count *= d;
    for (bool zeros : {false, true}) {
    // zeros: only -0, +0, -1 and NaN, so that most windows tie between the
    // two zeros and the kept one (the first in row-major order) shows.
    auto x = awkward_values(in_count, static_cast<uint32_t>(in_count));
    if (zeros)
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::array{0.0f, -0.0f, -1.0f, std::nanf("")}[(i * 7 + i / 5) % 4];
    std::vector<float> max_ref(static_cast<size_t>(out_count)), avg_ref(static_cast<size_t>(out_count));
    max_pool_f32(g, x.data(), max_ref.data());
    const bool dilated = c.dilations[0] != 1;
    if (!dilated) average_pool_f32(g, c.ceil_mode, x.data(), avg_ref.data());
    for (int threads : {1, 2, 4}) {
      std::vector<float> y(static_cast<size_t>(out_count), 42.0f);
      max_pool_f32_fast(g, x.data(), y.data(), threads);
      CHECK(same_bits(y, max_ref));
      if (dilated) continue;
      std::fill(y.begin(), y.end(), 42.0f);
      average_pool_f32_fast(g, c.ceil_mode, x.data(), y.data(), threads);
      CHECK(same_bits(y, avg_ref));
    }
    // Each vector MaxPool row path the host has, whichever the dispatch takes.
    for (auto* path : {&max_pool_2d_avx2<float>, &max_pool_2d_avx512<float>}) {
      std::vector<float> y(static_cast<size_t>(out_count), 42.0f);
      if (path(g, x.data(), y.data(), g.batch * g.channels, {})) CHECK(same_bits(y, max_ref));
    }
    }
  }
}
