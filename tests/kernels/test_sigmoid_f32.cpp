// Float Sigmoid's fast paths (kernels/sigmoid_f32.h): ONNX Runtime's bits,
// the same on every path and thread count.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "libquant/kernels/sigmoid_f32.h"

using quant::kernels::sigmoid_f32;
using quant::kernels::IsaCap;
using quant::kernels::detail::sigmoid_f32_path;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// FNV-1a (64-bit) over the bits of v.
uint64_t fnv1a(const std::vector<float>& v) {
  uint64_t hash = 0xcbf29ce484222325u;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    hash = (hash ^ bits) * 0x100000001b3u;
  }
  return hash;
}

}  // namespace

TEST_CASE("sigmoid_f32 gives ONNX Runtime's bits", "[kernels][sigmoid]") {
  // ONNX Runtime 1.20.1's Sigmoid-13 of x = -20 + k / 256, k = 0 .. 10239
  // (every value exact in float): FNV-1a over its outputs' bits, the same
  // from its AVX2-only view and natively on an AVX-512 VNNI host
  // (MlasLogisticKernelFma3 on both), 2026-12-03.
  std::vector<float> x(10240), y(x.size());
  for (int k = 0; k < 10240; ++k) x[k] = -20.0f + static_cast<float>(k) / 256.0f;
  sigmoid_f32(x.data(), y.data(), static_cast<int64_t>(x.size()), 1);
  CHECK(fnv1a(y) == 0x45958bb0bf88e498u);
  // Its outputs for these, the same run.
  const std::vector<float> special = {0.0f, -0.0f, 1e-30f, -1e-30f, 30.0f, -30.0f, 88.0f, -88.0f, INFINITY, -INFINITY};
  const std::vector<float> want = {0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f};
  std::vector<float> got(special.size());
  sigmoid_f32(special.data(), got.data(), static_cast<int64_t>(special.size()), 1);
  CHECK(same_bits(got, want));
  const float nan = NAN;
  float out = 0;
  sigmoid_f32(&nan, &out, 1, 1);
  CHECK(std::isnan(out));
}

TEST_CASE("sigmoid_f32 is within 2^-22 of 1 / (1 + exp(-x))", "[kernels][sigmoid]") {
  // An absolute bound: p / q + 0.5 cancels for large negative x, where the
  // relative error grows (sigmoid(-16) is 1.1e-7), as it does in ONNX Runtime.
  double worst = 0;
  for (float x = -16.0f; x <= 16.0f; x += 0.001f) {
    float y;
    sigmoid_f32(&x, &y, 1, 1);
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    worst = std::max(worst, std::abs(y - want));
  }
  CHECK(worst < 0x1p-22);
}

TEST_CASE("sigmoid_f32 gives the same bits on every path and thread count", "[kernels][sigmoid]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 8.0f);
  for (int64_t n : {1, 7, 8, 15, 16, 17, 100, 40000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    if (n > 20) {
      x[3] = NAN;
      x[5] = INFINITY;
      x[9] = -INFINITY;
      x[11] = -0.0f;
    }
    std::vector<float> want(x.size());
    REQUIRE(sigmoid_f32_path(IsaCap::Portable, x.data(), want.data(), n));
    int paths = 0;
    for (IsaCap path : {IsaCap::Avx2, IsaCap::Avx512}) {
      std::vector<float> y = x;  // in place
      if (!sigmoid_f32_path(path, y.data(), y.data(), n)) continue;
      ++paths;
      INFO("n " << n << ", path " << static_cast<int>(path));
      CHECK(same_bits(y, want));
    }
    for (int threads : {1, 3}) {
      std::vector<float> y(x.size());
      sigmoid_f32(x.data(), y.data(), n, threads);
      INFO("n " << n << ", " << threads << " threads");
      CHECK(same_bits(y, want));
    }
    INFO(paths << " vector paths on this host");
  }
}
