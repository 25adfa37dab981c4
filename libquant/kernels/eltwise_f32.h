// Fast float32 element-wise paths for the interpreter's hot ops (Relu, Clip,
// same-shape Add with an optional fused clamp, Add, Sub, Mul and Div of
// broadcast shapes), split over threads. Results equal the reference
// kernels (unary.h clip / Relu, elementwise.h binary_broadcast) bit for bit,
// NaN included, for any thread count.
#pragma once

#include <cstdint>
#include <span>

#include "libquant/kernels/elementwise.h"

namespace quant::kernels {

// y[i] = min(max(x[i], lo), hi) written as the reference clip: v = x < lo ? lo : x;
// y = v > hi ? hi : v (NaN passes through). Relu is lo = 0, hi = +inf. x may equal y.
void clamp_f32(const float* x, float* y, int64_t n, float lo, float hi, int threads);

// y[i] = a[i] + b[i], then clamped as clamp_f32 when `clamp`. y may equal a or b.
void add_f32(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi, int threads);

// y = a OP b for OP in Add, Sub, Mul, Div, the shapes broadcast as numpy
// does (BroadcastRuns: equal shapes, a scalar, SiLU's x * sigmoid(x), a
// squeeze-excitation's [N, C, H, W] * [N, C, 1, 1], a bias [C] added to
// [N, T, C]), in pieces of kElementPiece outputs over the threads. Each
// element is one IEEE operation, a OP b as the reference writes it: the
// bits of binary_broadcast<float> for any shapes and thread count, a NaN
// operand's payload included. (Of two NaNs IEEE 754 returns either, and for
// Add and Mul, commutative, GCC picks the operand order in both.) y may
// alias an input of y's shape. op must be one of the four.
void binary_f32(BinaryOp op, const float* a, std::span<const int64_t> a_shape, const float* b,
                std::span<const int64_t> b_shape, float* y, std::span<const int64_t> y_shape, int threads);

}  // namespace quant::kernels
