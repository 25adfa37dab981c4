// ONNX Softmax, LogSoftmax and Hardmax over one axis.
#pragma once

#include <cstdint>

namespace quant::kernels {

// Softmax of x viewed as [outer, axis_len, inner], normalised along the middle
// dimension: y = exp(x - max) / sum(exp(x - max)). Subtracting the max keeps
// exp from overflowing for large inputs. The caller picks the view:
//  - opset >= 13 (single axis): outer = prod(dims before axis),
//    axis_len = dims[axis], inner = prod(dims after axis).
//  - opset < 13 (input coerced to 2-D at axis): outer = prod(dims before
//    axis), axis_len = prod(dims from axis on), inner = 1.
// axis_len >= 1. A slice that contains +inf or only -inf yields NaN (as
// exp(inf - inf) does in ONNX Runtime). y may alias x. Allocates nothing.
void softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y);

// The same for float and double (softmax_f32 is softmax<float>).
template <class T>
void softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);

// LogSoftmax (same view): y = x - max - log(sum(exp(x - max))), which stays
// finite where log(softmax(x)) would underflow to -inf. y may alias x.
template <class T>
void log_softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);

// Hardmax (same view): 1 at the first maximum of each slice, 0 elsewhere
// (ONNX Hardmax-13: "the first maximum value"). y may alias x.
template <class T>
void hardmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);

}  // namespace quant::kernels
