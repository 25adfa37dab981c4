// The int8 x int4 block kernel of MatMulNBits against the scheme's maths
// (torchao Int8DynActInt4Weight) written out naively here, on odd shapes.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/dynamic_quantize.h"
#include "libquant/kernels/int4_matmul.h"

using namespace quant::kernels;

namespace {

struct Case {
  int64_t m, k, n, group;
};

std::vector<float> random_values(int64_t count, uint32_t seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) x = dist(rng);
  return v;
}

// Naive torchao scheme: weights w [K, N] quantized per column n and group of
// `group` consecutive k (scale = absmax / 7.5, codes clamped to -8..7);
// activations a [M, K] per row, asymmetric int8; y = sum over groups of
// s_a * s_w * sum (qa - za) * qw, in double.
std::vector<double> naive_8da4w(const std::vector<float>& a, const std::vector<float>& w, const Case& c,
                                const std::vector<float>* bias) {
  std::vector<double> y(static_cast<size_t>(c.m * c.n), 0.0);
  for (int64_t r = 0; r < c.m; ++r) {
    float lo = 0, hi = 0;
    for (int64_t k = 0; k < c.k; ++k) lo = std::min(lo, a[r * c.k + k]), hi = std::max(hi, a[r * c.k + k]);
    const float sa = std::max((hi - lo) / 255.0f, std::numeric_limits<float>::epsilon());
    const float za = std::clamp(std::nearbyint(-128.0f - lo / sa), -128.0f, 127.0f);
    for (int64_t n = 0; n < c.n; ++n) {
      double total = 0;
      for (int64_t k0 = 0; k0 < c.k; k0 += c.group) {
        const int64_t k1 = std::min(c.k, k0 + c.group);
        float absmax = 0;
        for (int64_t k = k0; k < k1; ++k) absmax = std::max(absmax, std::fabs(w[k * c.n + n]));
        const float sw = std::max(absmax / 7.5f, std::numeric_limits<float>::epsilon());
        int64_t acc = 0;
        for (int64_t k = k0; k < k1; ++k) {
          const float qa = std::clamp(std::nearbyint(a[r * c.k + k] / sa) + za, -128.0f, 127.0f);
          const float qw = std::clamp(std::nearbyint(w[k * c.n + n] / sw), -8.0f, 7.0f);
          acc += static_cast<int64_t>(qa - za) * static_cast<int64_t>(qw);
        }
        total += static_cast<double>(sw) * static_cast<double>(acc);
      }
      y[static_cast<size_t>(r * c.n + n)] = total * sa + (bias ? (*bias)[static_cast<size_t>(n)] : 0.0f);
    }
  }
  return y;
}

// The kernel path: the same weight quantization (done here, as qconvert
// does), packing, per-row activation quantization, the block kernel.
std::vector<float> kernel_8da4w(const std::vector<float>& a, const std::vector<float>& w, const Case& c,
                                const std::vector<float>* bias) {
  const int64_t nb = (c.k + c.group - 1) / c.group;
  std::vector<int8_t> codes(static_cast<size_t>(c.n * c.k));
  std::vector<float> scales(static_cast<size_t>(c.n * nb));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t k0 = b * c.group, k1 = std::min(c.k, k0 + c.group);
      float absmax = 0;
      for (int64_t k = k0; k < k1; ++k) absmax = std::max(absmax, std::fabs(w[k * c.n + n]));
      const float s = std::max(absmax / 7.5f, std::numeric_limits<float>::epsilon());
      scales[static_cast<size_t>(n * nb + b)] = s;
      for (int64_t k = k0; k < k1; ++k)
        codes[static_cast<size_t>(n * c.k + k)] = static_cast<int8_t>(std::clamp(std::nearbyint(w[k * c.n + n] / s), -8.0f, 7.0f));
    }
  std::vector<uint8_t> packed(static_cast<size_t>(c.n * nb * c.group / 2));
  pack_int4_blocks(codes.data(), c.n, c.k, c.group, packed.data());
  Int4Blocks blocks{c.n, c.k, c.group, packed.data(), scales.data(), nullptr};
  std::vector<int8_t> qa(a.size());
  std::vector<float> sa(static_cast<size_t>(c.m));
  std::vector<int32_t> za(static_cast<size_t>(c.m));
  quantize_rows_s8(a.data(), c.m, c.k, qa.data(), sa.data(), za.data());
  std::vector<float> y(static_cast<size_t>(c.m * c.n));
  matmul_s8_int4(qa.data(), sa.data(), za.data(), c.m, blocks, bias ? bias->data() : nullptr, y.data());
  return y;
}

}  // namespace

TEST_CASE("matmul_s8_int4 equals the naive Int8DynActInt4Weight maths on odd shapes", "[kernels][int4]") {
  // K not a multiple of the group (70 = 2 * 32 + 6), K below the group, one
  // row, exact multiples, large groups.
  const std::vector<Case> cases = {{3, 70, 5, 32}, {1, 16, 7, 64}, {4, 64, 3, 32}, {2, 300, 9, 128}, {5, 33, 1, 16},
                                   {2, 513, 4, 256}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(c.m, c.k, c.n, c.group);
    auto a = random_values(c.m * c.k, seed++, 2.0f);
    auto w = random_values(c.k * c.n, seed++, 0.1f);
    a[0] = 9.0f;  // an outlier widens one row's range
    std::vector<float> bias = random_values(c.n, seed++, 1.0f);
    const std::vector<const std::vector<float>*> biases = {nullptr, &bias};
    for (const std::vector<float>* b : biases) {
      auto want = naive_8da4w(a, w, c, b);
      auto got = kernel_8da4w(a, w, c, b);
      for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5).epsilon(1e-5));
    }
  }
}

TEST_CASE("matmul_f32_int4 and the zero points of MatMulNBits", "[kernels][int4]") {
  // K = 5 in one block of 16: codes 0..4 with zero point 3 (explicit, packed)
  // mean weights -3..1; scale 0.5.
  const int64_t K = 5;
  std::vector<int8_t> values = {-8, -7, -6, -5, -4};  // codes 0..4 with the default zero point 8
  std::vector<uint8_t> packed(8);
  pack_int4_blocks(values.data(), 1, K, 16, packed.data());
  CHECK(packed[0] == 0x10);  // code 0 low, code 1 high
  CHECK(packed[2] == 0x84);  // code 4 low, the padding code 8 (value 0) high
  const std::vector<float> scale = {0.5f};
  const std::vector<uint8_t> zp = {3};
  Int4Blocks b{1, K, 16, packed.data(), scale.data(), zp.data()};
  const std::vector<float> a = {1, 2, 3, 4, 5};
  float y = 0;
  matmul_f32_int4(a.data(), 1, b, nullptr, &y);
  // weights (code - 3) * 0.5 = -1.5, -1, -0.5, 0, 0.5
  CHECK(y == Approx(1 * -1.5 + 2 * -1.0 + 3 * -0.5 + 0 + 5 * 0.5));
  b.zero_points = nullptr;  // zero point 8: weights -4, -3.5, ..., -2
  matmul_f32_int4(a.data(), 1, b, nullptr, &y);
  CHECK(y == Approx(1 * -4.0 + 2 * -3.5 + 3 * -3.0 + 4 * -2.5 + 5 * -2.0));
}

TEST_CASE("dynamic_quantize_linear_u8 follows DynamicQuantizeLinear-11", "[kernels][dynamic]") {
  // The spec's example: x = [0, 2, -3, -2.5, 1.34, 0.5]: scale = 5 / 255, zero point 153.
  const std::vector<float> x = {0, 2, -3, -2.5f, 1.34f, 0.5f};
  std::vector<uint8_t> y(x.size());
  float scale = 0;
  uint8_t zp = 0;
  dynamic_quantize_linear_u8(x.data(), 6, y.data(), &scale, &zp);
  CHECK(scale == 5.0f / 255.0f);
  CHECK(zp == 153);
  CHECK(y == std::vector<uint8_t>{153, 255, 0, 26, 221, 179});
  // All zeros: scale 0 and zero point 0 (the spec divides by zero there).
  const std::vector<float> zeros(4, 0.0f);
  std::vector<uint8_t> yz(4, 7);
  dynamic_quantize_linear_u8(zeros.data(), 4, yz.data(), &scale, &zp);
  CHECK(scale == 0.0f);
  CHECK(zp == 0);
  CHECK(yz == std::vector<uint8_t>{0, 0, 0, 0});
}

TEST_CASE("quantize_rows_s8 gives each row its own range", "[kernels][dynamic]") {
  const std::vector<float> x = {0, 1, 2, 3, /* row 1 */ -1, -0.5f, 0, 0.5f};
  std::vector<int8_t> q(8);
  std::vector<float> s(2);
  std::vector<int32_t> z(2);
  quantize_rows_s8(x.data(), 2, 4, q.data(), s.data(), z.data());
  CHECK(s[0] == 3.0f / 255.0f);
  CHECK(z[0] == -128);
  CHECK(q[3] == 127);
  CHECK(s[1] == 1.5f / 255.0f);
  CHECK(z[1] == static_cast<int32_t>(std::nearbyint(-128.0f + 1.0f / (1.5f / 255.0f))));
  CHECK(q[4] == -128);
}
