// MaxPool on 8-bit data (ONNX MaxPool-12 takes int8 and uint8) for the
// interpreter's lowered quantized graphs: the same results as the reference
// max_pool<T> of pool.h (no Indices), which the tests compare it against.
#pragma once

#include <cstdint>

#include "libquant/kernels/pool.h"

namespace quant::kernels {

// 2-D pooling without dilation (ResNet's 3x3 stride-2 stem pool) runs in
// AVX-512 or AVX2 rows (pool_max_2d.h) when the CPU has AVX-512 BW or AVX2
// and the column stride is 1 or 2; otherwise separably: the window's rows are maxed 16
// bytes at a time into one line, then each output takes the max of its
// columns of that line. Every other geometry runs the reference kernel.
// Planes are split over `threads`; max is exact, so the result does not
// depend on them. T is uint8_t or int8_t.
template <class T>
void max_pool_8bit_fast(const PoolGeometry& g, const T* x, T* y, int threads);

}  // namespace quant::kernels
