// Float Sigmoid as ONNX Runtime computes it on x86-64 (MLAS's logistic
// kernel), on vectors and split over threads. The reference kernel
// (unary.h, UnaryOp::Sigmoid) keeps std::exp for doubles, halves and the
// lookup tables of the integer path.
#pragma once

#include <cstdint>

#include "libquant/kernels/cpu.h"

namespace quant::kernels {

// y[i] = sigmoid(x[i]) by MLAS's rational approximation (its FMA3 kernel,
// sigmoid_f32.cpp): within 1.5e-7 of 1 / (1 + exp(-x)) (an absolute bound:
// the relative error grows towards -18, past which x counts as -18, and
// +18 likewise), ONNX Runtime's bits. Every path (portable, AVX2, AVX-512)
// gives the same bits, on any number of threads. NaN stays NaN. x may
// equal y.
void sigmoid_f32(const float* x, float* y, int64_t n, int threads);

namespace detail {
// The elements [0, n) on the path of one level (Portable, Avx2, Avx512), for
// tests; false, with nothing written, where the build, the CPU or QTOOL_ISA
// rules it out (float_path_runs).
bool sigmoid_f32_path(IsaCap level, const float* x, float* y, int64_t n);
}  // namespace detail

}  // namespace quant::kernels
