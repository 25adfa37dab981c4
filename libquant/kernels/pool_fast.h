// Fast float pooling for the interpreter, compared against the reference
// kernels of pool.h in tests: the same results bit for bit, for any thread
// count (every output is computed by one thread, in the reference's order).
#pragma once

#include "libquant/kernels/pool.h"

namespace quant::kernels {

// max_pool_f32, with a direct 2-D path (no dilation) and the planes split over threads.
void max_pool_f32_fast(const PoolGeometry& g, const float* x, float* y, int threads);

// average_pool_f32 with the planes split over threads.
void average_pool_f32_fast(const PoolGeometry& g, bool count_include_pad, const float* x, float* y, int threads);

}  // namespace quant::kernels
