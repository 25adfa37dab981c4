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
// 3 x 3 windows at stride 2 all inside the plane (no padding: squeezenet's
// pools) skip the ring of folded rows: each output row folds its three
// rows directly, carrying the last one's fold to the next output row.
#pragma once

#include <cstdint>

#include "libquant/kernels/pool.h"

namespace quant::kernels {

// Where the planes of a call lie, in elements: plane p's input at x + p *
// in_step and output at y + p * out_step (0: planes packed one after the
// other, the geometry's plane sizes), and how far on from x loads may read
// (0: to the last plane's end). A band of rows of every plane (pool_fast.cpp)
// steps by whole planes and may read the rows after it.
struct PlaneSteps {
  int64_t in_step = 0, out_step = 0, readable = 0;
};

// Pools `planes` planes of a 2-D, undilated geometry (batch and channels of
// g are not read) when the CPU has the ISA (AVX-512 F+BW; AVX2), the column
// stride is 1 or 2 and the window at most 16 columns wide; returns false,
// having written nothing, otherwise (planes = 0 asks without pooling).
// T is float, uint8_t or int8_t. Both give the reference's bits.
template <class T>
bool max_pool_2d_avx512(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps = {});
template <class T>
bool max_pool_2d_avx2(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps = {});
// The widest of the two the CPU (capped by QTOOL_ISA, cpu.h) allows.
template <class T>
bool max_pool_2d_simd(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps = {});

}  // namespace quant::kernels
