#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/requant.h"

using namespace quant::kernels;

namespace {

__extension__ typedef __int128 int128;  // exact products for the reference (GCC/Clang)

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

// x / 2^e rounded to nearest, ties away from zero, computed with exact
// rationals (the test's own definition of gemmlowp's rounding).
int64_t round_half_away(int128 num, int e) {
  const int128 den = static_cast<int128>(1) << e;
  const int128 q = num / den, r = num % den;  // truncating
  if (2 * (r < 0 ? -r : r) >= den) return static_cast<int64_t>(q + (num < 0 ? -1 : 1));
  return static_cast<int64_t>(q);
}

// 2ab / 2^32 rounded to nearest, ties toward +infinity: floor((2ab + 2^31) / 2^32),
// which is what ARM's SQRDMULH and gemmlowp's scalar code compute.
int64_t doubling_high_mul_exact(int64_t a, int64_t b) {
  const int128 num = static_cast<int128>(a) * b * 2 + (static_cast<int128>(1) << 31);
  const int128 den = static_cast<int128>(1) << 32;
  const int128 q = num / den;
  return static_cast<int64_t>((num % den != 0 && num < 0) ? q - 1 : q);
}

// DESIGN's float requantization, written out.
template <class Q>
Q naive_float_requant(int32_t acc, float m, int32_t zp) {
  const float r = std::nearbyint(static_cast<float>(acc) * m);
  const double v = static_cast<double>(r) + zp;
  return static_cast<Q>(std::fmin(std::fmax(v, std::numeric_limits<Q>::min()), std::numeric_limits<Q>::max()));
}

}  // namespace

TEST_CASE("saturating_rounding_doubling_high_mul is SQRDMULH", "[kernels][requant]") {
  CHECK(saturating_rounding_doubling_high_mul(kMin, kMin) == kMax);
  CHECK(saturating_rounding_doubling_high_mul(kMin, kMax) == -kMax);
  CHECK(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30) == 1 << 29);
  // 2*a*b / 2^32 = +-0.5 exactly: ties go toward +infinity (SQRDMULH).
  CHECK(saturating_rounding_doubling_high_mul(1, 1 << 30) == 1);
  CHECK(saturating_rounding_doubling_high_mul(-1, 1 << 30) == 0);
  CHECK(saturating_rounding_doubling_high_mul(-3, 1 << 30) == -1);
  CHECK(saturating_rounding_doubling_high_mul(1, (1 << 30) - 1) == 0);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> d(kMin, kMax);
  for (int i = 0; i < 20000; ++i) {
    const int32_t a = d(rng), b = (i % 4 == 0) ? kMin : d(rng);
    if (a == kMin && b == kMin) continue;
    INFO("a=" << a << " b=" << b);
    REQUIRE(saturating_rounding_doubling_high_mul(a, b) == doubling_high_mul_exact(a, b));
  }
}

TEST_CASE("rounding_divide_by_pot rounds half away from zero", "[kernels][requant]") {
  CHECK(rounding_divide_by_pot(3, 1) == 2);
  CHECK(rounding_divide_by_pot(-3, 1) == -2);
  CHECK(rounding_divide_by_pot(5, 2) == 1);
  CHECK(rounding_divide_by_pot(6, 2) == 2);
  CHECK(rounding_divide_by_pot(-6, 2) == -2);
  CHECK(rounding_divide_by_pot(-5, 2) == -1);
  CHECK(rounding_divide_by_pot(kMax, 31) == 1);
  CHECK(rounding_divide_by_pot(kMin, 31) == -1);
  CHECK(rounding_divide_by_pot(kMin, 0) == kMin);
  std::mt19937 rng(8);
  std::uniform_int_distribution<int32_t> d(kMin, kMax);
  for (int e = 0; e <= 31; ++e) {
    for (int i = 0; i < 2000; ++i) {
      const int32_t x = d(rng);
      INFO("x=" << x << " e=" << e);
      REQUIRE(rounding_divide_by_pot(x, e) == round_half_away(x, e));
    }
  }
}

TEST_CASE("quantize_multiplier represents M as multiplier * 2^(shift-31)", "[kernels][requant]") {
  CHECK(quantize_multiplier(0.5).multiplier == (1 << 30));
  CHECK(quantize_multiplier(0.5).shift == 0);
  CHECK(quantize_multiplier(1.0).multiplier == (1 << 30));
  CHECK(quantize_multiplier(1.0).shift == 1);
  CHECK(quantize_multiplier(0.0).multiplier == 0);
  CHECK(quantize_multiplier(-1.0).multiplier == 0);
  CHECK(quantize_multiplier(std::ldexp(1.0, -40)).multiplier == 0);  // shift < -31
  // q rounds up to 2^31: halved, shift + 1.
  const FixedPointMultiplier up = quantize_multiplier(std::nextafter(1.0, 0.0));
  CHECK(up.multiplier == (1 << 30));
  CHECK(up.shift == 1);
  CHECK(quantize_multiplier(std::ldexp(1.0, 40)).multiplier == kMax);
  CHECK(quantize_multiplier(std::ldexp(1.0, 40)).shift == 30);
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> d(-30.0, 10.0);
  for (int i = 0; i < 5000; ++i) {
    const double m = std::exp2(d(rng));
    const FixedPointMultiplier f = quantize_multiplier(m);
    REQUIRE(f.multiplier >= (1 << 30));
    const double back = std::ldexp(static_cast<double>(f.multiplier), f.shift - 31);
    REQUIRE(std::fabs(back - m) <= std::ldexp(1.0, f.shift - 32));  // within half an ulp of the 31-bit mantissa
  }
}

TEST_CASE("multiply_by_quantized_multiplier is TFLite's", "[kernels][requant]") {
  // 100 * 0.25 = 25; 10 * 0.25 = 2.5 -> 3 (the final shift rounds ties away
  // from zero); -10 * 0.25 -> -3.
  const FixedPointMultiplier quarter = quantize_multiplier(0.25);
  CHECK(multiply_by_quantized_multiplier(100, quarter) == 25);
  CHECK(multiply_by_quantized_multiplier(10, quarter) == 3);
  CHECK(multiply_by_quantized_multiplier(-10, quarter) == -3);
  // M >= 1 shifts left first (4 = 0.5 * 2^3: x << 3, then times 0.5); a
  // shift that overflows saturates at the int32 limits instead of wrapping.
  const FixedPointMultiplier four = quantize_multiplier(4.0);
  CHECK(multiply_by_quantized_multiplier(7, four) == 28);
  CHECK(multiply_by_quantized_multiplier(kMax / 2, four) == (1 << 30));
  CHECK(multiply_by_quantized_multiplier(kMin / 2, four) == -(1 << 30));
  // Against the two-step definition with exact arithmetic, for M < 1.
  std::mt19937 rng(10);
  std::uniform_int_distribution<int32_t> acc(-(1 << 24), 1 << 24);
  std::uniform_real_distribution<double> e(-20.0, -0.01);
  for (int i = 0; i < 20000; ++i) {
    const int32_t x = acc(rng);
    const FixedPointMultiplier f = quantize_multiplier(std::exp2(e(rng)));
    const int64_t high = doubling_high_mul_exact(x, f.multiplier);
    REQUIRE(multiply_by_quantized_multiplier(x, f) == round_half_away(high, -f.shift));
  }
}

TEST_CASE("requantize float mode equals DESIGN's formula", "[kernels][requant]") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> acc_d(-(1 << 20), 1 << 20);
  std::uniform_int_distribution<int32_t> big_d(kMin, kMax);
  std::uniform_real_distribution<double> m_d(-24.0, 2.0);
  for (int zp : {0, 128, 255, 1, 37}) {
    const float m = static_cast<float>(std::exp2(m_d(rng)));
    const Requantizer r = make_requantizer(RequantMode::Float, std::vector<float>{m}, zp);
    for (int i = 0; i < 3000; ++i) {
      const int32_t a = (i % 5 == 0) ? big_d(rng) : acc_d(rng);
      REQUIRE(requantize_one<uint8_t>(a, r, 0) == naive_float_requant<uint8_t>(a, m, zp));
    }
  }
  for (int zp : {0, -128, 127, -5}) {
    const float m = static_cast<float>(std::exp2(m_d(rng)));
    const Requantizer r = make_requantizer(RequantMode::Float, std::vector<float>{m}, zp);
    for (int i = 0; i < 3000; ++i) {
      const int32_t a = acc_d(rng);
      REQUIRE(requantize_one<int8_t>(a, r, 0) == naive_float_requant<int8_t>(a, m, zp));
      REQUIRE(requantize_one<int16_t>(a, r, 0) == naive_float_requant<int16_t>(a, m, zp));
    }
  }
  // Ties go to even: 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4, -5 * 0.5 -> -2.
  const Requantizer half = make_requantizer(RequantMode::Float, std::vector<float>{0.5f}, 10);
  CHECK(requantize_one<uint8_t>(5, half, 0) == 12);
  CHECK(requantize_one<uint8_t>(7, half, 0) == 14);
  CHECK(requantize_one<uint8_t>(-5, half, 0) == 8);
  CHECK(requantize_one<uint8_t>(-100, half, 0) == 0);
  CHECK(requantize_one<uint8_t>(1000, half, 0) == 255);
  CHECK(requantize_one<int8_t>(kMin, half, 0) == -128);
  CHECK(requantize_one<int8_t>(kMax, half, 0) == 127);
  // float(acc) rounds: 16777217 becomes 16777216.0f before the multiply.
  const Requantizer one = make_requantizer(RequantMode::Float, std::vector<float>{1.0f / 65536}, 0);
  CHECK(requantize_one<int16_t>(16777217 + 32768, one, 0) == 256);
}

TEST_CASE("requantize fixed-point mode equals the gemmlowp pipeline", "[kernels][requant]") {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int32_t> acc_d(-(1 << 22), 1 << 22);
  std::uniform_real_distribution<double> m_d(-20.0, -1.0);
  for (int zp : {0, 128, 255}) {
    const float m = static_cast<float>(std::exp2(m_d(rng)));
    const Requantizer r = make_requantizer(RequantMode::FixedPoint, std::vector<float>{m}, zp);
    REQUIRE(r.fixed.size() == 1);
    for (int i = 0; i < 3000; ++i) {
      const int32_t a = acc_d(rng);
      const int64_t v = int64_t{multiply_by_quantized_multiplier(a, r.fixed[0])} + zp;
      REQUIRE(requantize_one<uint8_t>(a, r, 0) == static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)));
    }
  }
  // M = 0.5 is multiplier 2^30 with shift 0, so the tie is decided by
  // SQRDMULH (toward +infinity) where float mode rounds to even.
  const Requantizer half_fp = make_requantizer(RequantMode::FixedPoint, std::vector<float>{0.5f}, 0);
  const Requantizer half_f = make_requantizer(RequantMode::Float, std::vector<float>{0.5f}, 0);
  CHECK(requantize_one<int8_t>(5, half_fp, 0) == 3);
  CHECK(requantize_one<int8_t>(5, half_f, 0) == 2);
  CHECK(requantize_one<int8_t>(-5, half_fp, 0) == -2);
  CHECK(requantize_one<int8_t>(-7, half_fp, 0) == -3);
  CHECK(requantize_one<int8_t>(-7, half_f, 0) == -4);
  CHECK(requantize_one<int8_t>(1000, half_fp, 0) == 127);
}

TEST_CASE("requantize applies bias and per-column multipliers with strides", "[kernels][requant]") {
  for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
    // acc is 2 x 3 (row stride 4), written transposed into y (3 x 2).
    const std::vector<int32_t> acc = {10, 20, 30, -1, 40, 50, 60, -1};
    const std::vector<int32_t> bias = {2, -4, kMax};
    const std::vector<float> m = {0.5f, 0.25f, 1.0f / 1024};
    const Requantizer r = make_requantizer(mode, m, 3);
    std::vector<uint8_t> y(6, 0);
    requantize<uint8_t>(acc.data(), 2, 3, 4, bias.data(), r, 0, y.data(), 1, 2);
    // (1,1): 46 * 0.25 = 11.5 rounds to 12 in both modes (even, and away from
    // zero). Column 2: 30 + INT32_MAX wraps to a large negative number -> 0.
    CHECK(y == std::vector<uint8_t>{9, 24, 7, 15, 0, 0});
    std::vector<int8_t> y2(3);
    const Requantizer one = make_requantizer(mode, std::vector<float>{0.5f}, -1);
    requantize<int8_t>(acc.data(), 1, 3, 4, nullptr, one, 0, y2.data(), 3, 1);
    CHECK(y2 == std::vector<int8_t>{4, 9, 14});
    // Columns 0..1 as channels 1..2 of a per-channel Requantizer.
    std::vector<uint8_t> y3(2);
    requantize<uint8_t>(acc.data() + 4, 1, 2, 4, nullptr, r, 1, y3.data(), 2, 1);
    CHECK(y3 == std::vector<uint8_t>{3 + 10, 3 + 0});
  }
}

TEST_CASE("a requantizer's clamp equals clipping its output afterwards", "[kernels][requant]") {
  // The folded Relu/Clip of passes/lower_qdq: saturating to [clamp_lo, clamp_hi]
  // gives clip(requantize(acc), clamp_lo, clamp_hi) in both modes and types.
  std::mt19937 rng(41);
  std::uniform_int_distribution<int32_t> acc(-200000, 200000);
  for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
    const std::vector<float> m = {0.0011f, 0.00037f};
    Requantizer plain = make_requantizer(mode, m, -5);
    Requantizer clamped = plain;
    clamped.clamp_lo = -5, clamped.clamp_hi = 90;
    for (int i = 0; i < 20000; ++i) {
      const int32_t a = acc(rng);
      const int64_t ch = i % 2;
      REQUIRE(int{requantize_one<int8_t>(a, clamped, ch)} == std::clamp(int{requantize_one<int8_t>(a, plain, ch)}, -5, 90));
      REQUIRE(int{requantize_one<uint8_t>(a, clamped, ch)} == std::clamp(int{requantize_one<uint8_t>(a, plain, ch)}, 0, 90));
    }
  }
}
