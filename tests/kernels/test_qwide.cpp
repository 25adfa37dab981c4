// The 16-bit integer products (qwide.h) against direct int64 loops written
// here, and TFLite's int64 MultiplyByQuantizedMultiplier on values worked out
// by hand (tensorflow/lite/kernels/internal/common.cc).
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/qwide.h"
#include "tests/kernels/conv_case.h"
#include "tests/kernels/random_ints.h"

using namespace quant::kernels;

using quant::testing::random_values;

TEST_CASE("multiply_by_quantized_multiplier_wide is TFLite's int64 form", "[kernels][requant][wide]") {
  // M = 0.5: multiplier 2^30, shift 0; reduced to 16 bits: (2^30 + 2^15) >> 16 = 2^14; t = 15.
  const FixedPointMultiplier half = quantize_multiplier(0.5);
  REQUIRE(half.multiplier == (1 << 30));
  REQUIRE(half.shift == 0);
  CHECK(multiply_by_quantized_multiplier_wide(3, half) == 2);    // 1.5: ties toward +infinity
  CHECK(multiply_by_quantized_multiplier_wide(-3, half) == -1);  // -1.5 -> -1
  CHECK(multiply_by_quantized_multiplier_wide(int64_t{1} << 31, half) == (1 << 30));  // beyond int32 in, fits out
  // The 16-bit reduction loses what the 31-bit multiplier had: M = 0.7 ->
  // multiplier 1503238554, reduced (1503238554 + 32768) >> 16 = 22938,
  // so x = 10^6 gives (10^6 * 22938 + 2^14) >> 15 = 700012, not 700000.
  const FixedPointMultiplier m07 = quantize_multiplier(0.7);
  REQUIRE(m07.multiplier == 1503238554);
  CHECK(multiply_by_quantized_multiplier_wide(1000000, m07) == 700012);
  // A multiplier at or above 0x7FFF0000 reduces to 0x7FFF, not to 2^15 (which would overflow int16).
  CHECK(multiply_by_quantized_multiplier_wide(1 << 20, {0x7FFFFFFF, 0}) == ((int64_t{1} << 20) * 0x7FFF + (1 << 14)) >> 15);
  // M >= 2^15 (shift >= 15): a left shift instead of a rounding one; saturates to int32.
  CHECK(multiply_by_quantized_multiplier_wide(3, {1 << 30, 16}) == 3 * (1 << 14) * 2);
  CHECK(multiply_by_quantized_multiplier_wide(int64_t{1} << 46, {1 << 30, 16}) == std::numeric_limits<int32_t>::max());
  // Accumulators beyond TFLite's assumed |x| < 2^47 are clamped to it.
  CHECK(multiply_by_quantized_multiplier_wide(std::numeric_limits<int64_t>::min(), half) ==
        multiply_by_quantized_multiplier_wide(-(int64_t{1} << 47), half));
}

TEST_CASE("requantize_wide adds the bias in int64 and clamps to the output type", "[kernels][requant][wide]") {
  const Requantizer r = make_requantizer(RequantMode::FixedPoint, std::vector<double>{0.5, 0.25}, 0);
  const std::vector<int64_t> acc{int64_t{1} << 33, -(int64_t{1} << 33), 5, -7};
  const std::vector<int32_t> bias{std::numeric_limits<int32_t>::max(), 1};
  std::vector<int16_t> y(4);
  requantize_wide<int16_t>(acc.data(), 2, 2, 2, bias.data(), r, 0, y.data(), 2, 1);
  // (2^33 + 2^31 - 1) / 2 and (-2^33 + 1) / 4 saturate; (5 + 2^31 - 1) / 2 too; (-7 + 1) / 4 = -1.5 -> -1.
  CHECK(y == std::vector<int16_t>{32767, -32768, 32767, -1});
}

namespace {

template <class TA, class TB>
void check_gemm(std::mt19937& rng, int64_t m, int64_t n, int64_t k, bool nxk, bool per_column) {
  const std::vector<TA> a = random_values<TA>(rng, static_cast<size_t>(m * k));
  const std::vector<TB> b = random_values<TB>(rng, static_cast<size_t>(k * n));
  const std::vector<TB> zb = random_values<TB>(rng, static_cast<size_t>(per_column ? n : 1));
  const int32_t za = static_cast<int32_t>(random_values<TA>(rng, 1)[0]);
  WideGemmArgs<TA, TB> q;
  q.m = m, q.n = n, q.k = k, q.a = a.data(), q.lda = k, q.a_zero_point = za;
  q.b = b.data(), q.ldb = nxk ? k : n, q.b_nxk = nxk, q.b_zero_point = zb.data(), q.b_zero_point_count = per_column ? n : 1;
  std::vector<int64_t> acc(static_cast<size_t>(m * n));
  qgemm_wide(q, acc.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t want = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t bv = nxk ? b[static_cast<size_t>(j * k + kk)] : b[static_cast<size_t>(kk * n + j)];
        want += (int64_t{a[static_cast<size_t>(i * k + kk)]} - za) * (bv - zb[per_column ? static_cast<size_t>(j) : 0]);
      }
      REQUIRE(acc[static_cast<size_t>(i * n + j)] == want);
    }
}

}  // namespace

TEST_CASE("qgemm_wide is the exact int64 sum", "[kernels][wide]") {
  std::mt19937 rng(16);
  // K = 300 crosses several 64-term int32 blocks with full-range values.
  for (bool nxk : {false, true})
    for (bool per_column : {false, true}) {
      check_gemm<int16_t, int8_t>(rng, 3, 7, 300, nxk, per_column);
      check_gemm<uint16_t, uint8_t>(rng, 2, 5, 129, nxk, per_column);
      check_gemm<int16_t, uint8_t>(rng, 4, 3, 64, nxk, per_column);
      check_gemm<uint16_t, int8_t>(rng, 1, 9, 1, nxk, per_column);
    }
  // The extremes: every product at its largest magnitude, K = 4096.
  const int64_t k = 4096;
  std::vector<uint16_t> a(k, 65535);
  std::vector<int8_t> b(k, -128);
  const int8_t zb = 127;
  WideGemmArgs<uint16_t, int8_t> q;
  q.m = 1, q.n = 1, q.k = k, q.a = a.data(), q.lda = k, q.a_zero_point = 0, q.b = b.data(), q.ldb = 1, q.b_zero_point = &zb;
  int64_t acc = 0;
  qgemm_wide(q, &acc);
  CHECK(acc == k * 65535 * -255);
}

TEST_CASE("qconv_wide equals direct loops with int64 sums and the wide requantization", "[kernels][wide]") {
  using quant::testing::ConvCase;
  const std::vector<ConvCase> cases = {
      {1, 3, 5, 1, {6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},   // 3x3 pad 1
      {2, 4, 6, 2, {7, 5}, {2, 3}, {2, 1}, {1, 2}, {0, 1}, {1, 0}},   // groups, stride, dilation, uneven pads
      {1, 6, 6, 6, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},   // depthwise stride 2
      {1, 40, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},  // K = 360: several blocks
      {1, 2, 3, 1, {11}, {3}, {1}, {1}, {1}, {1}},                    // 1-D
  };
  std::mt19937 rng(1608);
  for (const ConvCase& c : cases) {
    const ConvGeometry g = quant::testing::geometry(c);
    const int64_t taps = [&] { int64_t t = 1; for (int64_t d : c.kernel) t *= d; return t; }();
    const int64_t in_plane = [&] { int64_t t = 1; for (int64_t d : c.in) t *= d; return t; }();
    const int64_t out_plane = [&] { int64_t t = 1; for (int64_t d : g.out_spatial) t *= d; return t; }();
    const int64_t group_in = c.in_channels / c.group, group_out = c.out_channels / c.group;
    const auto x = random_values<int16_t>(rng, static_cast<size_t>(c.batch * c.in_channels * in_plane));
    const auto w = random_values<uint8_t>(rng, static_cast<size_t>(c.out_channels * group_in * taps));
    const auto wz = random_values<uint8_t>(rng, static_cast<size_t>(c.out_channels));
    std::vector<int32_t> bias(static_cast<size_t>(c.out_channels));
    for (auto& b : bias) b = static_cast<int32_t>(rng() % 2000001) - 1000000;
    std::vector<double> mult;
    for (int64_t m = 0; m < c.out_channels; ++m) mult.push_back(1e-5 * static_cast<double>(1 + rng() % 1000));
    const Requantizer r = make_requantizer(RequantMode::FixedPoint, mult, 0);
    const int32_t xz = -7;
    std::vector<int16_t> y(static_cast<size_t>(c.batch * c.out_channels * out_plane));
    qconv_wide<int16_t, uint8_t, int16_t>(g, x.data(), xz, w.data(), wz.data(), c.out_channels, bias.data(), r, y.data());
    // Direct loops over output positions, written for 1-D and 2-D.
    const bool two_d = c.in.size() == 2;
    const int64_t ih = two_d ? c.in[0] : 1, iw = c.in.back(), kh = two_d ? c.kernel[0] : 1, kw = c.kernel.back();
    const int64_t oh = two_d ? g.out_spatial[0] : 1, ow = g.out_spatial.back();
    const int64_t sh = two_d ? c.strides[0] : 1, sw = c.strides.back(), dh = two_d ? c.dilations[0] : 1, dw = c.dilations.back();
    const int64_t ph = two_d ? g.pads_begin[0] : 0, pw = g.pads_begin.back();
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t m = 0; m < c.out_channels; ++m)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            int64_t acc = bias[static_cast<size_t>(m)];
            const int64_t grp = m / group_out;
            for (int64_t ch = 0; ch < group_in; ++ch)
              for (int64_t a = 0; a < kh; ++a)
                for (int64_t b = 0; b < kw; ++b) {
                  const int64_t yi = i * sh + a * dh - ph, xi = j * sw + b * dw - pw;
                  if (yi < 0 || yi >= ih || xi < 0 || xi >= iw) continue;
                  const int64_t xv = x[static_cast<size_t>(((n * c.in_channels + grp * group_in + ch) * ih + yi) * iw + xi)];
                  const int64_t wv = w[static_cast<size_t>(((m * group_in + ch) * kh + a) * kw + b)];
                  acc += (xv - xz) * (wv - wz[static_cast<size_t>(m)]);
                }
            const int16_t want = requantize_one_wide<int16_t>(acc, r, m);
            REQUIRE(y[static_cast<size_t>(((n * c.out_channels + m) * oh + i) * ow + j)] == want);
          }
  }
}
