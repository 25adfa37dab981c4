// Fast float32 element-wise paths for the interpreter's hot ops (Relu, Clip,
// same-shape Add with an optional fused clamp), split over threads. Results
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

}  // namespace quant::kernels
