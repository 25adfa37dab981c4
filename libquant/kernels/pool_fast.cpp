#include "libquant/kernels/pool_fast.h"

#include <algorithm>
#include <limits>

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

}  // namespace

void max_pool_2d_f32_portable(const PoolGeometry& g, const float* x, float* y) {
  const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
  for (int64_t p = 0; p < g.batch * g.channels; ++p) max_plane_2d(g, x + p * in_plane, y + p * out_plane);
}

void max_pool_f32_fast(const PoolGeometry& g, const float* x, float* y, int threads) {
  const bool direct_2d = g.kernel.size() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1;
  if (!direct_2d) {
    const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
    over_planes(g, threads, [&](const PoolGeometry& sub, int64_t p0) {
      max_pool_f32(sub, x + p0 * in_plane, y + p0 * out_plane);
    });
    return;
  }
  pool_2d_split(g, x, y, threads, [](const PoolGeometry& sub, const float* xp, float* yp) {
    if (!max_pool_2d_simd(sub, xp, yp, 1)) max_plane_2d(sub, xp, yp);
  });
}

void average_pool_f32_fast(const PoolGeometry& g, bool count_include_pad, const float* x, float* y, int threads) {
  const int64_t in_plane = volume(g.in_spatial), out_plane = volume(g.out_spatial);
  over_planes(g, threads, [&](const PoolGeometry& sub, int64_t p0) {
    average_pool_f32(sub, count_include_pad, x + p0 * in_plane, y + p0 * out_plane);
  });
}

}  // namespace quant::kernels
