#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <type_traits>
#include <random>
#include <vector>

#include "libquant/kernels/qconv.h"
#include "libquant/kernels/qdot_sat16.h"
#include "libquant/kernels/qgemm.h"
#include "tests/kernels/random_ints.h"

using quant::kernels::BLayout;
using quant::kernels::SaturationStats;
using quant::kernels::Sat16Weights;

namespace {

// The arithmetic written out independently: raw u8 x s8 products summed in
// pairs (2j, 2j + 1) of the given K order, each pair clamped to int16.
int64_t saturating_pairs(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int64_t sum = 0;
  for (size_t i = 0; i < a.size(); i += 2) {
    int64_t p = int64_t{a[i]} * b[i] + (i + 1 < a.size() ? int64_t{a[i + 1]} * b[i + 1] : 0);
    sum += std::clamp<int64_t>(p, -32768, 32767);
  }
  return sum;
}

}  // namespace

TEST_CASE("dot_u8s8_sat16 clips each pair to int16 as VPMADDUBSW does", "[kernels][sat16]") {
  // The fixture README's case: 255 * 127 + 255 * 127 = 64770 -> 32767 per pair.
  const std::vector<uint8_t> a(4, 255);
  const std::vector<int8_t> up(4, 127), down(4, -128);
  SaturationStats s;
  CHECK(quant::kernels::dot_u8s8_sat16(a.data(), up.data(), 4, s) == 65534);
  CHECK(quant::kernels::dot_u8s8_sat16(a.data(), down.data(), 4, s) == -65536);
  CHECK(s.pairs == 4);
  CHECK(s.saturated == 4);
  // An odd K: the last product alone never saturates (255 * -128 fits int16).
  SaturationStats odd;
  CHECK(quant::kernels::dot_u8s8_sat16(a.data(), down.data(), 3, odd) == -32768 + 255 * -128);
  CHECK(odd.pairs == 2);
  CHECK(odd.saturated == 1);
}

TEST_CASE("dot_u8s8_sat16: the vector path equals the portable loop", "[kernels][sat16]") {
  std::mt19937 rng(7);
  for (int64_t k : {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 257}) {
    auto a = quant::testing::random_values<uint8_t>(rng, static_cast<size_t>(k));
    auto b = quant::testing::random_values<int8_t>(rng, static_cast<size_t>(k));
    SaturationStats fast, slow;
    const int32_t x = quant::kernels::dot_u8s8_sat16(a.data(), b.data(), k, fast);
    const int32_t y = quant::kernels::dot_u8s8_sat16_portable(a.data(), b.data(), k, slow);
    CHECK(x == y);
    CHECK(fast.pairs == slow.pairs);
    CHECK(fast.saturated == slow.saturated);
    std::vector<int32_t> ai(a.begin(), a.end()), bi(b.begin(), b.end());
    CHECK(x == saturating_pairs(ai, bi));
  }
}

TEMPLATE_TEST_CASE("qgemm_sat16 applies zero points after the saturating pairs", "[kernels][sat16]", uint8_t, int8_t) {
  using TA = TestType;
  std::mt19937 rng(11);
  const int64_t m = 5, n = 7, k = 33;
  auto a = quant::testing::random_values<TA>(rng, static_cast<size_t>(m * k));
  auto b = quant::testing::random_values<int8_t>(rng, static_cast<size_t>(k * n));
  const std::vector<int8_t> zb = {0, 3, -5, 0, 1, 127, -128};
  const TA za = static_cast<TA>(std::is_signed_v<TA> ? -7 : 131);
  const auto w = Sat16Weights::from_matrix(b.data(), n, BLayout::KxN, k, n, zb.data(), n);
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  const auto stats = quant::kernels::qgemm_sat16<TA>(m, a.data(), k, za, w, 0, n, c.data(), n);
  CHECK(stats.saturated > 0);
  const int32_t shift = std::is_signed_v<TA> ? 128 : 0;  // int8 activations as ONNX Runtime's uint8 rewrite
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      std::vector<int32_t> ai, bj;
      int64_t row = 0, col = 0;
      for (int64_t p = 0; p < k; ++p) {
        ai.push_back(int32_t{a[i * k + p]} + shift), bj.push_back(b[p * n + j]);
        row += ai.back(), col += bj.back();
      }
      const int64_t zaa = int64_t{za} + shift, zbj = zb[static_cast<size_t>(j)];
      const int64_t want = saturating_pairs(ai, bj) - zbj * row - zaa * col + k * zaa * zbj;
      CHECK(c[static_cast<size_t>(i * n + j)] == static_cast<int32_t>(want));
    }
}

TEST_CASE("qgemm_sat16 equals exact arithmetic when no pair can saturate", "[kernels][sat16]") {
  std::mt19937 rng(5);
  const int64_t m = 4, n = 9, k = 40;
  auto a = quant::testing::random_values<uint8_t>(rng, static_cast<size_t>(m * k));
  std::vector<int8_t> b(static_cast<size_t>(k * n));
  std::uniform_int_distribution<int> d(-64, 64);  // |w0| + |w1| <= 128: 255 * 128 fits int16
  for (auto& x : b) x = static_cast<int8_t>(d(rng));
  const auto w = Sat16Weights::from_matrix(b.data(), n, BLayout::KxN, k, n, nullptr, 0);
  std::vector<int32_t> got(static_cast<size_t>(m * n)), want(got.size());
  const auto stats = quant::kernels::qgemm_sat16<uint8_t>(m, a.data(), k, uint8_t{100}, w, 0, n, got.data(), n);
  CHECK(stats.saturated == 0);
  quant::kernels::QGemmArgs<uint8_t, int8_t> q;
  q.m = m, q.n = n, q.k = k, q.a = a.data(), q.lda = k, q.a_zero_point = 100, q.b = b.data(), q.ldb = n, q.c = want.data(),
  q.ldc = n;
  quant::kernels::qgemm_reference(q);
  CHECK(got == want);
}

TEST_CASE("qconv_sat16_s32 pairs channels of one tap, as ONNX Runtime's NHWC im2col orders K", "[kernels][sat16]") {
  // C = 2, 3x3: channel 0 all 255 with weights 127, channel 1 all 0. In ONNX
  // Runtime's order (tap major) each pair is (c0, c1) of one tap: 32385, no
  // saturation. Pairing taps of one channel (NCHW order) would clip 64770.
  quant::kernels::ConvGeometry g;
  g.batch = 1, g.in_channels = 2, g.out_channels = 1, g.group = 1;
  g.in_spatial = {3, 3}, g.kernel = {3, 3}, g.strides = {1, 1}, g.dilations = {1, 1};
  g.pads_begin = {0, 0}, g.pads_end = {0, 0}, g.out_spatial = {1, 1};
  std::vector<uint8_t> x(18, 0);
  std::fill(x.begin(), x.begin() + 9, 255);
  std::vector<int8_t> w(18, 0);
  std::fill(w.begin(), w.begin() + 9, 127);
  const auto sw = Sat16Weights::from_conv(w.data(), 1, 2, 9, nullptr, 0);
  int32_t acc = 0;
  const auto stats = quant::kernels::qconv_sat16_s32<uint8_t>(g, x.data(), uint8_t{0}, sw, &acc);
  CHECK(acc == 9 * 255 * 127);
  CHECK(stats.saturated == 0);
  CHECK(stats.pairs == 9);
}

TEST_CASE("qconv_sat16_s32 equals the exact convolution when no pair can saturate", "[kernels][sat16]") {
  std::mt19937 rng(3);
  quant::kernels::ConvGeometry g;
  g.batch = 2, g.in_channels = 6, g.out_channels = 4, g.group = 2;
  g.in_spatial = {5, 6}, g.kernel = {3, 3}, g.strides = {2, 1}, g.dilations = {1, 1};
  g.pads_begin = {1, 1}, g.pads_end = {1, 0}, g.out_spatial = {3, 5};
  const int64_t plane = 15, group_in = 3;
  auto x = quant::testing::random_values<uint8_t>(rng, static_cast<size_t>(2 * 6 * 30));
  std::vector<int8_t> w(static_cast<size_t>(4 * group_in * 9));
  std::uniform_int_distribution<int> d(-64, 64);
  for (auto& v : w) v = static_cast<int8_t>(d(rng));
  const std::vector<int8_t> wz = {0, 2, -1, 0};
  const auto sw = Sat16Weights::from_conv(w.data(), 4, group_in, 9, wz.data(), 4);
  std::vector<int32_t> acc(static_cast<size_t>(2 * plane * 4));
  CHECK(quant::kernels::qconv_sat16_s32<uint8_t>(g, x.data(), uint8_t{9}, sw, acc.data()).saturated == 0);
  quant::kernels::QConvArgs<uint8_t, int8_t> args;
  args.x = x.data(), args.x_zero_point = 9, args.w = w.data(), args.w_zero_point = wz.data(), args.w_zero_point_count = 4;
  std::vector<int32_t> want(acc.size());
  std::vector<int32_t> scratch(quant::kernels::qconv_workspace_bytes(g) / sizeof(int32_t) + 1);
  quant::kernels::qconv_s32(g, args, want.data(), scratch.data());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t c = 0; c < 4; ++c)
        CHECK(acc[static_cast<size_t>((n * plane + p) * 4 + c)] == want[static_cast<size_t>((n * 4 + c) * plane + p)]);
}
