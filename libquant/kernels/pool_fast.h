// Fast float pooling for the interpreter, compared against the reference
// kernels of pool.h in tests: the same results bit for bit, for any thread
// count (every output is computed by one thread, in the reference's order).
#pragma once

#include "libquant/kernels/pool.h"

namespace quant::kernels {

// max_pool_f32, with a direct 2-D path (no dilation) and the planes split over threads.
void max_pool_f32_fast(const PoolGeometry& g, const float* x, float* y, int threads);

// The portable direct 2-D path of max_pool_f32_fast (2-D, no dilation), which
// that function takes where AVX-512 or AVX2 does not cover the geometry;
// exposed so that tests check it on hosts where a vector path takes every case.
void max_pool_2d_f32_portable(const PoolGeometry& g, const float* x, float* y);

// average_pool_f32 with the planes split over threads.
void average_pool_f32_fast(const PoolGeometry& g, bool count_include_pad, const float* x, float* y, int threads);

}  // namespace quant::kernels
