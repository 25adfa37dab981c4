// Element-wise unary kernels: ONNX math functions and activations.
// Standard library only; allocates nothing.
#pragma once

#include <cstdint>

namespace quant::kernels {

enum class UnaryOp {
  // Math (ONNX opset 13 unless noted).
  Abs, Neg, Floor, Ceil, Round, Sign, Sqrt, Reciprocal, Exp, Log, Tanh, Erf,
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,  // opset 7 / 9
  Softplus, Softsign, Relu, Sigmoid, Mish,
  // Activations with attributes (see UnaryParams).
  LeakyRelu,        // x < 0 ? alpha * x : x
  Elu,              // x < 0 ? alpha * (exp(x) - 1) : x
  Selu,             // gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)
  Celu,             // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  ThresholdedRelu,  // x > alpha ? x : 0
  HardSigmoid,      // max(0, min(1, alpha * x + beta))
  HardSwish,        // x * HardSigmoid(x) with alpha 1/6, beta 0.5
  GeluErf,          // 0.5 x (1 + erf(x / sqrt 2))                       (Gelu opset 20, approximate="none")
  GeluTanh,         // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (approximate="tanh")
  Shrink,           // x < -alpha ? x + beta : x > alpha ? x - beta : 0     (Shrink opset 9, alpha = lambd, beta = bias)
};

// Attribute values of the activations; unused fields are ignored.
struct UnaryParams {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;
};

// y[i] = op(x[i]). y may equal x.
// Instantiated for float and double (every op), and for the integer types
// int8..uint64, where Abs, Neg, Sign and Relu are exact (Abs and Neg wrap on
// the most negative value, as two's complement hardware does) and the other
// ops are evaluated in double and converted back by truncation with
// saturation (ONNX allows integers for Erf, opset 13).
//
// Choices the spec leaves open, after ONNX Runtime's CPU kernels:
//  - Round is round-half-to-even (the spec demands it), via nearbyint in the
//    default rounding mode.
//  - Sign(NaN) is 0 (ORT computes (x > 0) - (x < 0)); Relu(NaN) is NaN.
//  - Softplus is evaluated as max(x, 0) + log1p(exp(-|x|)) so that it neither
//    overflows for large x nor loses precision for small exp(x).
template <class T>
void unary(UnaryOp op, const T* x, T* y, int64_t n, const UnaryParams& p = {});

// y[i] = min(max(x[i], lo), hi) (ONNX Clip, opset 12+ for integers). When lo > hi
// every output is hi, as the spec (opset 13) states. NaN propagates.
template <class T>
void clip(const T* x, T* y, int64_t n, T lo, T hi);

// Bool outputs (stored as uint8 0/1). IsNaN (opset 13) and IsInf (opset 10) for
// float and double.
template <class T>
void is_nan(const T* x, uint8_t* y, int64_t n);
template <class T>
void is_inf(const T* x, uint8_t* y, int64_t n, bool detect_negative, bool detect_positive);

// ONNX Not (opset 1) on bool storage.
void logical_not(const uint8_t* x, uint8_t* y, int64_t n);

}  // namespace quant::kernels
