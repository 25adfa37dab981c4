// Element type conversions: IEEE half and bfloat16 encodings, and the ONNX
// Cast rules between every numeric type and bool (opset 6-17; strings and the
// float8 types of opset 19 are not covered). Standard library only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace quant::kernels {

// IEEE 754 binary16, rounded to nearest even (overflow gives +-inf, NaN stays
// NaN). Converting from double directly avoids the double rounding of
// double -> float -> half.
uint16_t double_to_half(double v);
inline uint16_t float_to_half(float v) { return double_to_half(static_cast<double>(v)); }
float half_to_float(uint16_t h);

// bfloat16 is the upper half of a float32. float -> bfloat16 truncates, as
// ONNX Runtime did through release 1.15 and as the ONNX 1.12 Cast reference
// expects (test_cast_FLOAT_to_BFLOAT16 encodes 0.48033667 as 0x3EF5, not the
// rounded 0x3EF6); NaN stays a quiet NaN.
uint16_t float_to_bfloat16(float v);
inline float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Float -> integer: truncate toward zero (ONNX Cast, C semantics). Values
// beyond the target's range saturate to its min/max and NaN gives 0. ONNX
// Runtime leaves out-of-range values to the hardware (a C++ static_cast, UB in
// the language; x86 yields INT_MIN for 32/64-bit targets); saturation is the
// defined result closest to the intent and what opset 19's saturate=1 means.
template <class I, class F>
I saturate_trunc(F v) {
  static_assert(std::is_integral_v<I> && std::is_floating_point_v<F>);
  if (std::isnan(v)) return 0;
  // 2^digits is exact in F and is the first value past the top of I.
  const F top = std::ldexp(F{1}, std::numeric_limits<I>::digits);
  if (v >= top) return std::numeric_limits<I>::max();
  if constexpr (std::is_signed_v<I>) {
    if (v <= -top) return std::numeric_limits<I>::min();
  } else {
    if (v <= F{0}) return 0;
  }
  return static_cast<I>(v);
}

// Tags for the element types whose storage type does not say how to read
// them: Float16 and BFloat16 are stored as uint16_t bits, Bool as uint8_t 0/1.
struct Float16Tag {};
struct BFloat16Tag {};
struct BoolTag {};

template <class Tag>
struct storage_of {
  using type = Tag;
};
template <>
struct storage_of<Float16Tag> {
  using type = uint16_t;
};
template <>
struct storage_of<BFloat16Tag> {
  using type = uint16_t;
};
template <>
struct storage_of<BoolTag> {
  using type = uint8_t;
};
template <class Tag>
using storage_t = typename storage_of<Tag>::type;

// The value a stored element stands for: float for the 16-bit floats, bool for Bool.
template <class Tag>
auto load_value(storage_t<Tag> s) {
  if constexpr (std::is_same_v<Tag, Float16Tag>)
    return half_to_float(s);
  else if constexpr (std::is_same_v<Tag, BFloat16Tag>)
    return bfloat16_to_float(s);
  else if constexpr (std::is_same_v<Tag, BoolTag>)
    return s != 0;
  else
    return s;
}

// Converts a value to element type Tag following ONNX Cast: integer -> integer
// wraps modulo 2^bits (two's complement, what ONNX Runtime's static_cast does),
// anything -> bool is `!= 0` (NaN is true), bool -> number is 0 or 1.
template <class Tag, class V>
storage_t<Tag> store_value(V v) {
  if constexpr (std::is_same_v<Tag, Float16Tag>) {
    return double_to_half(static_cast<double>(v));
  } else if constexpr (std::is_same_v<Tag, BFloat16Tag>) {
    return float_to_bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<Tag, BoolTag>) {
    return v != V{} ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<Tag>) {
    return static_cast<Tag>(v);
  } else if constexpr (std::is_floating_point_v<V>) {
    return saturate_trunc<Tag>(v);
  } else {
    return static_cast<Tag>(v);
  }
}

// y[i] = Cast(x[i]) from element type Src to Dst (tags or C++ types).
template <class Src, class Dst>
void cast_array(const storage_t<Src>* x, storage_t<Dst>* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = store_value<Dst>(load_value<Src>(x[i]));
}

}  // namespace quant::kernels
