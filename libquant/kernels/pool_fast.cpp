#include "libquant/kernels/pool_fast.h"

#include <algorithm>
#include <limits>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/pool_max_2d.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {
namespace {

int64_t volume(const Dims& d) {
  int64_t v = 1;
  for (int64_t x : d) v *= x;
  return v;
}

// Runs fn(sub_geometry, first_plane) over chunks of the N*C planes: a plane
// is independent of the others, so a chunk is a pool of batch 1 and `count`
// channels starting at that plane.
template <class F>
void over_planes(const PoolGeometry& g, int threads, F fn) {
  in_parts(g.batch * g.channels, threads, [&](int64_t p0, int64_t count) {
    PoolGeometry sub = g;
    sub.batch = 1;
    sub.channels = count;
    fn(sub, p0);
  });
}

// One plane of a 2-D max pool without dilation. As max_pool_f32: the max
// over taps inside the input, starting from lowest() and updated with v > m
// (NaN skipped); ties keep an equal value, so the tap order does not matter.
void max_plane_2d(const PoolGeometry& g, const float* x, float* y) {
  const int64_t H = g.in_spatial[0], W = g.in_spatial[1], OH = g.out_spatial[0], OW = g.out_spatial[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t ph = g.pads_begin[0], pw = g.pads_begin[1];
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t h0 = oh * sh - ph;
    const int64_t hlo = std::max<int64_t>(h0, 0), hhi = std::min(h0 + kh, H);
    float* yr = y + oh * OW;
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t w0 = ow * sw - pw;
      const int64_t wlo = std::max<int64_t>(w0, 0), whi = std::min(w0 + kw, W);
      float m = std::numeric_limits<float>::lowest();
      for (int64_t h = hlo; h < hhi; ++h) {
        const float* xr = x + h * W;
        for (int64_t w = wlo; w < whi; ++w) m = xr[w] > m ? xr[w] : m;
      }
      yr[ow] = m;
    }
  }
}

// Output rows [oh0, oh1) of a 2-D pool's plane (g undilated) as a pool of
// their own: the input rows they read start at *first_row (the band's x
// starts there, its y at row oh0), and the top padding is what of it the
// band still has; a band of windows all in padding reads no row.
PoolGeometry row_band(const PoolGeometry& g, int64_t oh0, int64_t oh1, int64_t* first_row) {
  const int64_t h = g.in_spatial[0], sh = g.strides[0], ph = g.pads_begin[0], kh = g.kernel[0];
  // Output row r reads input rows [r sh - ph, r sh - ph + kh) within [0, h).
  const int64_t r0 = std::clamp<int64_t>(oh0 * sh - ph, 0, h);
  const int64_t r1 = std::clamp<int64_t>((oh1 - 1) * sh - ph + kh, r0, h);
  PoolGeometry b = g;
  b.in_spatial[0] = r1 - r0;
  b.out_spatial[0] = oh1 - oh0;
  // The band's row r is the plane's row oh0 + r, whose first input row,
  // oh0 sh + r sh - ph, is band row r sh - max(0, ph - oh0 sh) (r0 is 0
  // where padding remains). A band of windows past the input's end reads
  // no row, whatever its padding.
  b.pads_begin[0] = std::max<int64_t>(0, ph - oh0 * sh);
  b.pads_end[0] = 0;  // not read: the band's rows end where its windows do
  *first_row = r0;
  return b;
}

// Whether threads split a 2-D pool by bands of output rows across all
// planes rather than by runs of planes. Where a plane has more pixels than
// its channels have 3x3 taps, the convolution around the pool splits by
// pixels too (conv_lanes.cpp's rule, the direct path's wherever pixels
// outnumber channels), and bands keep each thread on the rows its core
// wrote and the next layer reads from it: resnet18's stem pool (64 planes
// of 112 x 112), 2 threads, QTOOL_ISA=avx2, per-step minima in the model,
// took 158-169 us by planes, half of its input coming from the other
// core's cache, and 151-152 by bands. The 8-bit pools (qpool_max.cpp) keep
// runs of planes: resnet18 int8's stem pool, a quarter of the bytes, took
// 76-81 us by bands against 73-74 by planes. That was an Intel Xeon with
// 2 MiB of L2 per core, where a thread's band of every plane (1.6 MiB
// there) stays in the cache of the core that wrote it. On a Zen 5 with
// 1 MiB it does not, and runs of planes were faster, natively and under
// QTOOL_ISA=avx2 alike (the same pool, 2 threads, per-step in the model,
// stop 75: 67-85 us by planes against 117-147 by bands, which took longer
// than one thread's 102-134): bands only where a thread's share fits its L2.
bool by_rows(const PoolGeometry& g, int threads) {
  const int64_t input_bytes = g.batch * g.channels * volume(g.in_spatial) * int64_t{sizeof(float)};
  return threads > 1 && g.in_spatial.size() == 2 && g.out_spatial[0] >= 2 * threads &&
         g.in_spatial[0] * g.in_spatial[1] > 9 * g.channels && input_bytes / threads <= l2_cache_bytes();
}

}  // namespace

void max_pool_2d_f32_portable(const PoolGeometry& g, const float* x, float* y) {
  const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
  for (int64_t p = 0; p < g.batch * g.channels; ++p) max_plane_2d(g, x + p * in_plane, y + p * out_plane);
}

void max_pool_f32_fast(const PoolGeometry& g, const float* x, float* y, int threads) {
  const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
  const bool direct_2d = g.kernel.size() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1;
  if (!direct_2d) {
    over_planes(g, threads, [&](const PoolGeometry& sub, int64_t p0) {
      max_pool_f32(sub, x + p0 * in_plane, y + p0 * out_plane);
    });
    return;
  }
  const int64_t planes = g.batch * g.channels, oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t bands = by_rows(g, threads) ? std::min<int64_t>(threads, oh) : 1;
  PoolGeometry whole = g;
  whole.batch = whole.channels = 1;
  if (bands == 1) {
    // Runs of whole planes per thread, in one call each: a call per plane
    // cost as much as the pool on small planes (squeezenet1_1's 256 of 27 x 27).
    in_parts(planes, threads, [&](int64_t p0, int64_t count) {
      const float* xp = x + p0 * in_plane;
      float* yp = y + p0 * out_plane;
      if (max_pool_2d_simd(whole, xp, yp, count)) return;
      for (int64_t p = 0; p < count; ++p) max_plane_2d(whole, xp + p * in_plane, yp + p * out_plane);
    });
    return;
  }
  // Bands of rows (row_band's geometry), one per thread over every plane
  // in one call: thread t takes the t-th band of every plane. Every output
  // is computed once, as the whole plane would compute it. A band may read
  // on past its rows, up to the input's end.
  parallel_for(threads, bands, [&](int64_t band) {
    const int64_t oh0 = band * oh / bands, oh1 = (band + 1) * oh / bands;
    int64_t first_row = 0;
    const PoolGeometry sub = row_band(whole, oh0, oh1, &first_row);
    const int64_t skip = first_row * g.in_spatial[1];
    const float* xb = x + skip;
    float* yb = y + oh0 * ow;
    if (max_pool_2d_simd(sub, xb, yb, planes, PlaneSteps{in_plane, out_plane, planes * in_plane - skip})) return;
    for (int64_t p = 0; p < planes; ++p) max_plane_2d(sub, xb + p * in_plane, yb + p * out_plane);
  });
}

void average_pool_f32_fast(const PoolGeometry& g, bool count_include_pad, const float* x, float* y, int threads) {
  const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
  over_planes(g, threads, [&](const PoolGeometry& sub, int64_t p0) {
    average_pool_f32(sub, count_include_pad, x + p0 * in_plane, y + p0 * out_plane);
  });
}

}  // namespace quant::kernels
