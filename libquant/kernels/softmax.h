// ONNX Softmax, LogSoftmax and Hardmax over one axis.
#pragma once

#include <cstdint>

#include "libquant/kernels/cpu.h"

namespace quant::kernels {

// Softmax of x viewed as [outer, axis_len, inner], normalised along the middle
// dimension: y = exp(x - max) / sum(exp(x - max)). Subtracting the max keeps
// exp from overflowing for large inputs. The caller picks the view:
//  - opset >= 13 (single axis): outer = prod(dims before axis),
//    axis_len = dims[axis], inner = prod(dims after axis).
//  - opset < 13 (input coerced to 2-D at axis): outer = prod(dims before
//    axis), axis_len = prod(dims from axis on), inner = 1.
// axis_len >= 1. A slice that contains +inf or only -inf yields NaN (as
// exp(inf - inf) does in ONNX Runtime). y may alias x. Floats follow ONNX
// Runtime's vector arithmetic (MLAS's exp polynomial, the sum's reciprocal
// times each term) with one order of the sum on every ISA
// (softmax_f32.cpp); a slice of an axis other than the last goes through a
// per-thread row buffer. The slices go over up to `threads` threads (the
// same bits on any number).
void softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y, int threads = 1);

// LogSoftmax of floats, the same way: y = (x - max) - log(sum of the terms).
void log_softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y, int threads = 1);

// One term of softmax_f32's sum, exp(x + neg_max) by MLAS's polynomial, as
// every ISA path computes it (for tests).
float softmax_exp_term(float x, float neg_max);

namespace detail {
// One row of d floats (Softmax, or LogSoftmax with `log`) on the path of one
// level (Portable, Avx2, Avx512), for tests that compare the paths; false,
// with nothing written, where this build, the CPU or QTOOL_ISA rules the
// path out (float_path_runs). y may be x.
bool softmax_row_f32(IsaCap level, const float* x, int64_t d, float* y, bool log);
}  // namespace detail

// The same for float and double (softmax<float> is softmax_f32; double
// computes with std::exp, slice by slice).
template <class T>
void softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);

// LogSoftmax (same view): y = x - max - log(sum(exp(x - max))), which stays
// finite where log(softmax(x)) would underflow to -inf. y may alias x.
// log_softmax<float> is log_softmax_f32.
template <class T>
void log_softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);
template <>
void softmax<float>(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y);
template <>
void log_softmax<float>(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y);

// Hardmax (same view): 1 at the first maximum of each slice, 0 elsewhere
// (ONNX Hardmax-13: "the first maximum value"). y may alias x.
template <class T>
void hardmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y);

}  // namespace quant::kernels
