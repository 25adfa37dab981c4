// Fast float32 element-wise paths for the interpreter's hot ops (Relu, Clip,
// same-shape Add with an optional fused clamp, Mul of one shape or by a value
// per row), split over threads. Results
// equal the reference kernels (unary.h clip / Relu, elementwise.h Add) bit
// for bit, NaN included, for any thread count.
#pragma once

#include <cstdint>

namespace quant::kernels {

// y[i] = min(max(x[i], lo), hi) written as the reference clip: v = x < lo ? lo : x;
// y = v > hi ? hi : v (NaN passes through). Relu is lo = 0, hi = +inf. x may equal y.
void clamp_f32(const float* x, float* y, int64_t n, float lo, float hi, int threads);

// y[i] = a[i] + b[i], then clamped as clamp_f32 when `clamp`. y may equal a or b.
void add_f32(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi, int threads);

// y[i] = a[i] * b[i] (SiLU's x * sigmoid(x)). y may equal a or b.
void mul_f32(const float* a, const float* b, float* y, int64_t n, int threads);

// Rows of `len` values each scaled by one value: y[r * len + i] =
// x[r * len + i] * s[r], or s[r] * x[r * len + i] with `scale_first` (the
// operands in the graph's order, so that a NaN's payload is the same one as
// the reference's): a Mul of [N, C, H, W] by [N, C, 1, 1] (squeeze and
// excitation). y may equal x.
void scale_rows_f32(const float* x, const float* s, float* y, int64_t rows, int64_t len, bool scale_first,
                    int threads);

}  // namespace quant::kernels
