// Element-wise reference kernels: broadcasting binary arithmetic (ONNX
// Add/Sub/Mul/Div, opset 14) and float unary activations.
#pragma once

#include <cstdint>
#include <span>

namespace quant::kernels {

enum class BinaryOp { Add, Sub, Mul, Div };

// y = a OP b with numpy multidirectional broadcasting (ONNX Broadcasting.md).
// y_shape must be broadcast_shapes(a_shape, b_shape); y must not alias a or b
// unless the aliased input has y's shape. Allocates nothing.
//
// Instantiated for float, double, int32_t, int64_t.
// Integer semantics (ONNX leaves them to the runtime):
//  - Div truncates toward zero (C++ `/`), as ONNX Runtime does; numpy floors
//    instead, so -7 / 2 is -3 here and -4 in numpy.
//  - Add/Sub/Mul wrap around in two's complement on overflow (what ONNX
//    Runtime's hardware arithmetic does, made well-defined here).
//  - x / 0 gives 0, and INT_MIN / -1 gives INT_MIN: defined results where
//    ONNX Runtime traps (SIGFPE); callers that care must check divisors.
// Float follows IEEE 754 (x / 0 is +-inf or NaN).
template <class T>
void binary_broadcast(BinaryOp op, const T* a, std::span<const int64_t> a_shape, const T* b,
                      std::span<const int64_t> b_shape, T* y, std::span<const int64_t> y_shape);

// ONNX Relu (opset 14): y = max(x, 0). NaN propagates.
void relu_f32(const float* x, float* y, int64_t n);

// ONNX Clip (opset 13): y = min(max(x, lo), hi). When lo > hi every output is
// hi, as the spec states. NaN propagates. Callers pass -inf/+inf (or
// numeric_limits lowest/max) for an absent min/max input.
void clip_f32(const float* x, float* y, int64_t n, float lo, float hi);

// ONNX Sigmoid (opset 13): y = 1 / (1 + exp(-x)), evaluated without overflow
// for large |x| (exp is only ever taken of a non-positive number).
void sigmoid_f32(const float* x, float* y, int64_t n);

}  // namespace quant::kernels
