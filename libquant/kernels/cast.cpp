#include "libquant/kernels/cast.h"

namespace quant::kernels {
namespace {

// Shifts `mant` right by `shift` (1..63), rounding to nearest, ties to even.
uint64_t shift_round_even(uint64_t mant, int shift) {
  const uint64_t kept = mant >> shift;
  const uint64_t rem = mant & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  return kept + ((rem > half || (rem == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

uint16_t double_to_half(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const auto sign = static_cast<uint16_t>((bits >> 48) & 0x8000);
  const uint64_t abs = bits & 0x7FFF'FFFF'FFFF'FFFFull;
  constexpr uint64_t kExpMask = 0x7FF0'0000'0000'0000ull;
  if (abs >= kExpMask) {  // inf or NaN; NaN keeps its top payload bits and stays quiet
    if (abs == kExpMask) return sign | 0x7C00;
    return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 42) & 0x1FF));
  }
  const int exp = static_cast<int>(abs >> 52) - 1023;
  const uint64_t mant = (abs & 0x000F'FFFF'FFFF'FFFFull) | (uint64_t{1} << 52);
  if (exp > 15) return sign | 0x7C00;  // beyond 65504 + half an ulp: overflow
  if (exp >= -14) {
    // Normal half: a mantissa carry out of rounding bumps the exponent, and
    // from exponent 15 into the infinity encoding, which is the right result.
    const uint64_t h = (static_cast<uint64_t>(exp + 15) << 10) + (shift_round_even(mant, 42) - (uint64_t{1} << 10));
    return static_cast<uint16_t>(sign | h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal (2^-25): +-0
  // Subnormal half: units of 2^-24. A carry into 0x400 gives the smallest normal.
  return static_cast<uint16_t>(sign | shift_round_even(mant, 28 - exp));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F80'0000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: exact as a float, mant * 2^-24.
    const float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_bfloat16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto b = static_cast<uint16_t>(bits >> 16);
  // A NaN whose payload sits only in the dropped low bits would become inf.
  if (std::isnan(v)) b |= 0x0040;
  return b;
}

}  // namespace quant::kernels
