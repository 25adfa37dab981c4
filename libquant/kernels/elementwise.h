// Element-wise reference kernels with numpy multidirectional broadcasting
// (ONNX docs/Broadcasting.md): arithmetic, Mod, Min/Max, PRelu, bit and logic
// ops, comparisons, Pow and Where; plus the float32 activations the quantized
// paths call directly. The broadcasting walk is kernels/broadcast.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace quant::kernels {

enum class BinaryOp {
  Add, Sub, Mul, Div,
  Mod,              // ONNX Mod fmod=0 (opset 10/13): the result takes the divisor's sign (Python %)
  FMod,             // ONNX Mod fmod=1: C fmod / truncated remainder, the dividend's sign
  Min, Max,         // ONNX Min/Max (opset 13) as a pair; NaN propagates (numpy minimum/maximum)
  PRelu,            // a < 0 ? a * b : a (b is the slope)
  BitShiftLeft,     // ONNX BitShift (opset 11), unsigned types
  BitShiftRight,
  And, Or, Xor,     // ONNX And/Or/Xor (opset 7) on bool storage: any non-zero byte is true
};

// y = a OP b with broadcasting. y_shape must be broadcast_shapes(a_shape,
// b_shape); y may alias a or b only when that input has y's shape. Allocates
// nothing.
//
// Instantiated for float, double and int8..uint64. BitShift* and And/Or/Xor
// are for integer types only (callers check: ONNX allows them on unsigned
// types and bool respectively).
// Integer semantics (ONNX leaves them to the runtime):
//  - Div truncates toward zero (C++ `/`), as ONNX Runtime does; numpy floors
//    instead, so -7 / 2 is -3 here and -4 in numpy.
//  - Add/Sub/Mul/PRelu wrap around in two's complement on overflow (what ONNX
//    Runtime's hardware arithmetic does, made well-defined here).
//  - x / 0 and x mod 0 give 0, and INT_MIN / -1 gives INT_MIN: defined results
//    where ONNX Runtime traps (SIGFPE); callers that care must check divisors.
//  - A shift by the type's width or more gives 0 (undefined in C++; the
//    arithmetic meaning of shifting every bit out).
// Float follows IEEE 754 (x / 0 is +-inf or NaN).
template <class T>
void binary_broadcast(BinaryOp op, const T* a, std::span<const int64_t> a_shape, const T* b,
                      std::span<const int64_t> b_shape, T* y, std::span<const int64_t> y_shape);

// ONNX Equal/Less/Greater (opset 13), LessOrEqual/GreaterOrEqual (opset 16):
// y (bool, stored as uint8 0/1) = a OP b with broadcasting. Comparisons with
// NaN are false except NaN != x. Instantiated for float, double, int8..uint64.
enum class CompareOp { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };
template <class T>
void compare_broadcast(CompareOp op, const T* a, std::span<const int64_t> a_shape, const T* b,
                       std::span<const int64_t> b_shape, uint8_t* y, std::span<const int64_t> y_shape);

// ONNX Pow (opset 15): y = base ^ exponent with broadcasting; y has the base's
// type. Instantiated for base float, double, int32, int64 and any numeric
// exponent type.
//  - Float base: std::pow in double, rounded to the base type.
//  - Integer base, integer exponent: exact repeated squaring, wrapping on
//    overflow (numpy's result; ONNX Runtime goes through double and loses the
//    low bits past 2^53). A negative exponent gives the truncated value of
//    the real result: 1 for base 1, +-1 for base -1, else 0 (ORT's cast of
//    pow(double, double)); 0 ^ negative gives 0.
//  - Integer base, float exponent: pow in double, truncated toward zero with
//    saturation (ORT's static_cast of the double result, made defined).
template <class TB, class TE>
void pow_broadcast(const TB* base, std::span<const int64_t> base_shape, const TE* exponent,
                   std::span<const int64_t> exponent_shape, TB* y, std::span<const int64_t> y_shape);

// ONNX Where (opset 16): out = cond ? x : y with three-way broadcasting, for
// any element size of 1, 2, 4 or 8 bytes (the values are only copied).
void where_broadcast(const uint8_t* cond, std::span<const int64_t> cond_shape, const void* x,
                     std::span<const int64_t> x_shape, const void* y, std::span<const int64_t> y_shape, void* out,
                     std::span<const int64_t> out_shape, size_t elem_size);

// ONNX Relu (opset 14): y = max(x, 0). NaN propagates.
void relu_f32(const float* x, float* y, int64_t n);

// ONNX Clip (opset 13): y = min(max(x, lo), hi). When lo > hi every output is
// hi, as the spec states. NaN propagates. Callers pass -inf/+inf (or
// numeric_limits lowest/max) for an absent min/max input.
void clip_f32(const float* x, float* y, int64_t n, float lo, float hi);

}  // namespace quant::kernels
