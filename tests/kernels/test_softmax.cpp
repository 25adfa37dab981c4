#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "libquant/kernels/softmax.h"

using quant::kernels::softmax_f32;

TEST_CASE("softmax_f32 basic and large values", "[kernels][softmax]") {
  const std::vector<float> expected = {0.09003057f, 0.24472847f, 0.66524096f};
  for (float offset : {0.0f, 1000.0f, -1000.0f, 80.0f}) {
    const std::vector<float> x = {1 + offset, 2 + offset, 3 + offset};
    std::vector<float> y(3);
    softmax_f32(x.data(), 1, 3, 1, y.data());
    INFO("offset " << offset);
    for (int i = 0; i < 3; ++i) CHECK(y[i] == Approx(expected[i]).epsilon(1e-5));
  }
  const std::vector<float> x = {-1000, 0, 1000};
  std::vector<float> y(3);
  softmax_f32(x.data(), 1, 3, 1, y.data());
  CHECK(y == std::vector<float>{0, 0, 1});
}

TEST_CASE("softmax_f32 over a middle axis and several rows", "[kernels][softmax]") {
  // Shape [2,3,2], axis 1: slices are x[o, :, j].
  std::vector<float> x = {1, 0, 2, 0, 3, 0,      // o = 0: column 0 = 1,2,3; column 1 = 0,0,0
                          5, 7, 5, 7, 5, 1000};  // o = 1: column 0 = 5,5,5; column 1 = 7,7,1000
  softmax_f32(x.data(), 2, 3, 2, x.data());      // in place
  CHECK(x[0] == Approx(0.09003057f));
  CHECK(x[2] == Approx(0.24472847f));
  CHECK(x[4] == Approx(0.66524096f));
  for (int i : {1, 3, 5, 6, 8, 10}) CHECK(x[i] == Approx(1.0 / 3));
  CHECK(x[7] == 0.0f);
  CHECK(x[9] == 0.0f);
  CHECK(x[11] == 1.0f);
}

TEST_CASE("softmax_f32 opset < 13 coerces to 2-D", "[kernels][softmax]") {
  // Shape [1,2,2] with axis 1 before opset 13: one row of 4 elements.
  const std::vector<float> x = {0, 0, 0, std::log(5.0f)};
  std::vector<float> y(4);
  softmax_f32(x.data(), 1, 4, 1, y.data());
  CHECK(y[0] == Approx(0.125));
  CHECK(y[3] == Approx(0.625));
}

namespace {

using quant::kernels::IsaCap;
using quant::kernels::detail::softmax_row_f32;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// softmax_f32's definition written out: MLAS's terms, the sum in 16 lanes
// (lane l takes the terms i = l mod 16) folded in halves, then the
// reciprocal times each term; LogSoftmax (x - max) - log(sum).
std::vector<float> reference(const std::vector<float>& x, bool log) {
  float max = -INFINITY;
  for (float v : x) max = std::fmax(max, v);
  const float neg_max = -max;
  std::vector<float> t(x.size());
  float lanes[16] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    t[i] = quant::kernels::softmax_exp_term(x[i], neg_max);
    lanes[i % 16] += t[i];
  }
  for (int half = 8; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) lanes[l] += lanes[l + half];
  std::vector<float> y(x.size());
  const float scale = 1.0f / lanes[0], log_sum = std::log(lanes[0]);
  for (size_t i = 0; i < x.size(); ++i) y[i] = log ? (x[i] + neg_max) - log_sum : t[i] * scale;
  return y;
}

std::vector<float> random_row(std::mt19937& rng, size_t d, float spread) {
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> x(d);
  for (float& v : x) v = normal(rng);
  return x;
}

}  // namespace

TEST_CASE("softmax_f32's terms are exp to a few ulps, zero below 2^-126", "[kernels][softmax]") {
  // MLAS's polynomial (onnxruntime/core/mlas/lib/compute.cpp) on [-87.3, 0],
  // where the terms of a shifted row lie, against exp in double.
  double worst = 0;
  for (float x = -87.3f; x <= 0.0f; x = std::nextafter(x + 0.0137f, 1.0f)) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(quant::kernels::softmax_exp_term(x, 0.0f) - want) / want);
  }
  CHECK(worst < 2.5e-7);  // 2 ulps of a float
  CHECK(quant::kernels::softmax_exp_term(0.0f, 0.0f) == 1.0f);
  CHECK(quant::kernels::softmax_exp_term(5.0f, -5.0f) == 1.0f);
  for (float x : {-88.0f, -88.5f, -100.0f, -1000.0f, -INFINITY}) CHECK(quant::kernels::softmax_exp_term(x, 0.0f) == 0.0f);
  CHECK(std::isnan(quant::kernels::softmax_exp_term(NAN, 0.0f)));
}

TEST_CASE("softmax_f32 gives ONNX Runtime's recorded outputs", "[kernels][softmax]") {
  // ONNX Runtime 1.20.1, Softmax-13 over the last axis, AVX2 + FMA kernels
  // (an AVX-512 host under scripts/cpuid_avx2.c's view, 2026-12-03).
  const std::vector<float> x = {0, -87, -88, -88.5f, -89, -100, -103.9f, -104, -150};
  std::vector<float> y(x.size());
  softmax_f32(x.data(), 1, static_cast<int64_t>(x.size()), 1, y.data());
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 1.6458114537543937e-38f);
  for (size_t i = 2; i < y.size(); ++i) CHECK(y[i] == 0.0f);
}

TEST_CASE("softmax_f32's terms are ONNX Runtime's to the bit", "[kernels][softmax]") {
  // ONNX Runtime 1.20.1's Softmax-13 of rows {0, v}: the sum rounds to 1, so
  // the second output is v's term itself; the same from its AVX2 + FMA and
  // AVX-512 kernels (this host, and under scripts/cpuid_avx2.c's view).
  const std::vector<std::pair<float, float>> recorded = {
      {-17.25f, 0x1.14f49ep-25f}, {-18.0f, 0x1.05a628p-26f}, {-19.5f, 0x1.d30decp-29f}, {-21.125f, 0x1.6fdfb4p-31f},
      {-23.75f, 0x1.aa610ap-35f}, {-26.0f, 0x1.67852ap-38f}, {-29.3125f, 0x1.a30e84p-43f}, {-33.5f, 0x1.973c0cp-49f},
      {-37.0f, 0x1.898472p-54f}, {-41.875f, 0x1.8094d6p-61f}, {-46.25f, 0x1.35d5a6p-67f}, {-50.0f, 0x1.d257d6p-73f},
      {-55.5f, 0x1.e7e4fap-81f}, {-61.0625f, 0x1.df8402p-89f}, {-66.75f, 0x1.9fe75ep-97f}, {-72.0f, 0x1.175af0p-104f},
      {-77.375f, 0x1.4b2e0cp-112f}, {-81.5f, 0x1.5697f2p-118f}, {-84.25f, 0x1.5e6b9ep-122f},
      {-86.0f, 0x1.e726c4p-125f}, {-86.875f, 0x1.96265ep-126f}, {-87.25f, 0x1.172478p-126f}};
  for (auto [v, term] : recorded) {
    INFO("v " << v);
    CHECK(quant::kernels::softmax_exp_term(v, 0.0f) == term);
    const float x[2] = {0.0f, v};
    float y[2];
    softmax_f32(x, 1, 2, 1, y);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == term);
  }
}

TEST_CASE("softmax_f32's terms on a fine grid hash as ONNX Runtime's", "[kernels][softmax]") {
  // The same rows {0, v} for v = -17 - k / 64, k = 0 .. 4479 (down to
  // -86.98): FNV-1a (64-bit) over the bits of ONNX Runtime 1.20.1's second
  // outputs, from its AVX2 + FMA and its AVX-512 kernels alike.
  uint64_t hash = 0xcbf29ce484222325u;
  for (int k = 0; k < 4480; ++k) {
    const float term = quant::kernels::softmax_exp_term(-17.0f - static_cast<float>(k) / 64.0f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &term, sizeof bits);
    hash = (hash ^ bits) * 0x100000001b3u;
  }
  CHECK(hash == 0x3f222b7089c925f6u);
}

TEST_CASE("softmax_f32 sums in one order on every path", "[kernels][softmax]") {
  std::mt19937 rng(7);
  for (size_t d : {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 64, 100, 1000}) {
    for (float spread : {0.5f, 5.0f, 40.0f}) {
      std::vector<float> x = random_row(rng, d, spread);
      if (d > 20) {  // values whose terms vanish, and the largest twice
        x[3] = -1000.0f;
        x[d - 2] = *std::max_element(x.begin(), x.end());
      }
      for (bool log : {false, true}) {
        INFO("d " << d << ", spread " << spread << (log ? ", LogSoftmax" : ", Softmax"));
        const std::vector<float> want = reference(x, log);
        std::vector<float> y(d);
        if (log)
          quant::kernels::log_softmax_f32(x.data(), 1, static_cast<int64_t>(d), 1, y.data());
        else
          softmax_f32(x.data(), 1, static_cast<int64_t>(d), 1, y.data());
        CHECK(same_bits(y, want));
        int paths = 0;
        for (IsaCap path : {IsaCap::Portable, IsaCap::Avx2, IsaCap::Avx512}) {
          std::vector<float> z = x;  // in place
          if (!softmax_row_f32(path, z.data(), static_cast<int64_t>(d), z.data(), log)) continue;
          ++paths;
          INFO("path " << static_cast<int>(path));
          CHECK(same_bits(z, want));
        }
        CHECK(paths >= 1);
        // Within float rounding of the exact softmax.
        double max = -INFINITY, sum = 0;
        for (float v : x) max = std::max(max, static_cast<double>(v));
        for (float v : x) sum += std::exp(v - max);
        for (size_t i = 0; i < d; ++i) {
          const double exact = log ? x[i] - max - std::log(sum) : std::exp(x[i] - max) / sum;
          CHECK(std::abs(y[i] - exact) <= 1e-6 * std::max(1.0, std::abs(exact)) + (log ? 0.0 : 1e-37));
        }
      }
    }
  }
}

TEST_CASE("softmax_f32 over other axes gives the last axis's bits", "[kernels][softmax]") {
  // [2, 37, 3] over axis 1 against each slice as a row of its own.
  std::mt19937 rng(11);
  const int64_t outer = 2, d = 37, inner = 3;
  const std::vector<float> x = random_row(rng, outer * d * inner, 4.0f);
  for (bool log : {false, true}) {
    std::vector<float> y(x.size());
    if (log)
      quant::kernels::log_softmax_f32(x.data(), outer, d, inner, y.data());
    else
      softmax_f32(x.data(), outer, d, inner, y.data());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        std::vector<float> row(d), got(d);
        for (int64_t a = 0; a < d; ++a) row[a] = x[(o * d + a) * inner + j];
        for (int64_t a = 0; a < d; ++a) got[a] = y[(o * d + a) * inner + j];
        INFO("slice " << o << ", " << j << (log ? ", LogSoftmax" : ", Softmax"));
        CHECK(same_bits(got, reference(row, log)));
      }
  }
}

TEST_CASE("softmax_f32 makes a row with NaN or +inf all NaN on every path", "[kernels][softmax]") {
  for (size_t d : {5, 16, 40}) {
    for (float bad : {NAN, INFINITY}) {
      std::vector<float> x(d, 1.0f);
      x[d / 2] = bad;
      for (bool log : {false, true})
        for (IsaCap path : {IsaCap::Portable, IsaCap::Avx2, IsaCap::Avx512}) {
          std::vector<float> y(d, 42.0f);
          if (!softmax_row_f32(path, x.data(), static_cast<int64_t>(d), y.data(), log)) continue;
          INFO("d " << d << ", " << bad << ", path " << static_cast<int>(path) << (log ? ", LogSoftmax" : ""));
          for (float v : y) CHECK(std::isnan(v));
        }
    }
  }
}

TEST_CASE("softmax_f32 gives the same bits on any number of threads", "[kernels][softmax]") {
  std::mt19937 rng(5);
  // Slices of 300 values: 54 to a task, so 200 slices make four tasks.
  for (int64_t inner : {1, 25}) {
    const int64_t outer = 200 / inner, d = 300;
    const std::vector<float> x = random_row(rng, outer * d * inner, 6.0f);
    for (bool log : {false, true}) {
      std::vector<float> one(x.size()), three(x.size());
      auto run = log ? quant::kernels::log_softmax_f32 : softmax_f32;
      run(x.data(), outer, d, inner, one.data(), 1);
      run(x.data(), outer, d, inner, three.data(), 3);
      INFO("inner " << inner << (log ? ", LogSoftmax" : ", Softmax"));
      CHECK(same_bits(one, three));
      std::vector<float> row(x.begin(), x.begin() + d);  // the first slice, where inner is 1
      if (inner == 1) CHECK(same_bits(std::vector<float>(one.begin(), one.begin() + d), reference(row, log)));
    }
  }
}
