// 2-D MaxPool rows in AVX-512 or AVX2 vectors, for the fast float and 8-bit pools
// (pool_fast.h, qpool_max.h); the reference max_pool of pool.h defines the
// result, and the tests compare with it bit for bit.
//
// Each input row is loaded in place, the padding read as the type's lowest
// value (masked loads at the row's ends; AVX2 bytes, which have none, load
// across the row's end and blend), stride 2 split into its even and odd
// columns in scratch, and folded across the window's columns into one value per
// output column; an output row is then the fold of its window's rows. Every
// fold keeps the running value m unless the next one v has v > m (NaN never
// replaces m, a tie keeps the earlier), starting from lowest(), as the
// reference does over the window in (row, column) order: the kept value is
// the first maximum in that order, so the two-level fold gives the same
// bits, signed zeros included. A padding tap (lowest()) never replaces m.
#pragma once

#include <algorithm>
#include <cstdint>

#include "libquant/kernels/pool.h"
#include "libquant/kernels/threadpool.h"

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

// Output rows [oh0, oh1) of a 2-D pool's plane (g undilated) as a pool of
// their own: the input rows they read start at *first_row (the band's x
// starts there, its y at row oh0), and the top padding is what of it the
// band still has; a band of windows all in padding reads no row.
PoolGeometry pool_row_band(const PoolGeometry& g, int64_t oh0, int64_t oh1, int64_t* first_row);

// Whether threads split a 2-D pool by bands of output rows across all
// planes rather than by runs of planes. Where a plane has more pixels than
// its channels have 3x3 taps, the convolution around the pool splits by
// pixels too (conv_lanes.cpp's rule, the direct path's wherever pixels
// outnumber channels), and bands keep each thread on the rows its core
// wrote and the next layer reads from it: resnet18's stem pool (64 planes
// of 112 x 112), 2 threads, QTOOL_ISA=avx2, per-step minima in the model,
// took 158-169 us by planes, half of its input coming from the other
// core's cache, and 151-152 by bands.
bool pool_by_rows(const PoolGeometry& g, int threads);

// Runs plane(sub, x_plane, y_plane) over the planes of a 2-D, undilated
// pool on up to `threads` threads: whole planes (sub = g with batch and
// channels 1), or by pool_by_rows bands of them (sub = pool_row_band's).
// Every output is computed once, as the whole plane would compute it.
template <class T, class F>
void pool_2d_split(const PoolGeometry& g, const T* x, T* y, int threads, F plane) {
  const int64_t planes = g.batch * g.channels, oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t in_plane = g.in_spatial[0] * g.in_spatial[1], out_plane = oh * ow;
  const int64_t bands = pool_by_rows(g, threads) ? std::min<int64_t>(threads, oh) : 1;
  PoolGeometry whole = g;
  whole.batch = whole.channels = 1;
  // Band-major tasks: parallel_for's shares give thread t the t-th band of
  // every plane.
  parallel_for(threads, bands * planes, [&](int64_t task) {
    const int64_t band = task / planes, p = task % planes;
    if (bands == 1) return plane(whole, x + p * in_plane, y + p * out_plane);
    const int64_t oh0 = band * oh / bands, oh1 = (band + 1) * oh / bands;
    int64_t first_row = 0;
    const PoolGeometry sub = pool_row_band(whole, oh0, oh1, &first_row);
    plane(sub, x + p * in_plane + first_row * g.in_spatial[1], y + p * out_plane + oh0 * ow);
  });
}

}  // namespace quant::kernels
