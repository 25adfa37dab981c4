// 2-D MaxPool rows in AVX-512 or AVX2 vectors, for the fast float and 8-bit pools
// (pool_fast.h, qpool_max.h); the reference max_pool of pool.h defines the
// result, and the tests compare with it bit for bit.
//
// Each input row is loaded in place, the padding read as the type's lowest
// value (masked loads at the row's ends; AVX2 bytes, which have none, load
// across the row's end and blend), stride 2 split into its even and odd
// columns (in scratch, or for 3-wide windows in registers), and folded across
// the window's columns into one value per output column; an output row is
// then the fold of its window's rows. Every
// fold keeps the running value m unless the next one v has v > m (NaN never
// replaces m, a tie keeps the earlier), starting from lowest(), as the
// reference does over the window in (row, column) order: the kept value is
// the first maximum in that order, so the two-level fold gives the same
// bits, signed zeros included. A padding tap (lowest()) never replaces m.
#pragma once

#include <cstdint>

#include "libquant/kernels/pool.h"

namespace quant::kernels {

// Pools `planes` planes of a 2-D, undilated geometry (batch and channels of
// g are not read) when the CPU has the ISA (AVX-512 F+BW; AVX2), the column
// stride is 1 or 2 and the window at most 16 columns wide; returns false,
// having written nothing, otherwise (planes = 0 asks without pooling).
// T is float, uint8_t or int8_t. Both give the reference's bits.
template <class T>
bool max_pool_2d_avx512(const PoolGeometry& g, const T* x, T* y, int64_t planes);
template <class T>
bool max_pool_2d_avx2(const PoolGeometry& g, const T* x, T* y, int64_t planes);
// The widest of the two the CPU (capped by QTOOL_ISA, cpu.h) allows.
template <class T>
bool max_pool_2d_simd(const PoolGeometry& g, const T* x, T* y, int64_t planes);

}  // namespace quant::kernels
