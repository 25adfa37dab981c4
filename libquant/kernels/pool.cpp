#include "libquant/kernels/pool.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/spatial.h"

namespace quant::kernels {

void pool_output_shape(AutoPad auto_pad, bool ceil_mode, std::span<const int64_t> in_spatial,
                       std::span<const int64_t> kernel, std::span<const int64_t> strides,
                       std::span<const int64_t> dilations, Dims& pads_begin, Dims& pads_end, Dims& out_spatial) {
  if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
    resolve_conv_pads(auto_pad, in_spatial, kernel, strides, dilations, pads_begin, pads_end, out_spatial);
    return;
  }
  const size_t n = in_spatial.size();
  assert(kernel.size() == n && strides.size() == n && dilations.size() == n);
  if (auto_pad == AutoPad::Valid) {
    pads_begin.assign(n, 0);
    pads_end.assign(n, 0);
  }
  assert(pads_begin.size() == n && pads_end.size() == n);
  out_spatial.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = in_spatial[i], s = strides[i];
    const int64_t span = in + pads_begin[i] + pads_end[i] - ((kernel[i] - 1) * dilations[i] + 1);
    if (!ceil_mode) {
      out_spatial[i] = detail::floor_div(span, s) + 1;
      continue;
    }
    int64_t out = -detail::floor_div(-span, s) + 1;
    if ((out - 1) * s >= in + pads_begin[i]) --out;
    out_spatial[i] = out;
  }
}

namespace {

detail::Spatial3 spatial3(const PoolGeometry& g) {
  return detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
}

// Visits every output position of one plane with the window's per-dimension
// start and its range of taps [lo, hi) that fall inside the input.
template <class F>
void for_each_window(const detail::Spatial3& s, F f) {
  for (int64_t od = 0; od < s.out[0]; ++od) {
    const int64_t sd = od * s.strides[0] - s.pads_begin[0];
    const detail::IndexRange td = detail::valid_range(sd, s.dilations[0], s.in[0], s.kernel[0]);
    for (int64_t oh = 0; oh < s.out[1]; ++oh) {
      const int64_t sh = oh * s.strides[1] - s.pads_begin[1];
      const detail::IndexRange th = detail::valid_range(sh, s.dilations[1], s.in[1], s.kernel[1]);
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        const int64_t sw = ow * s.strides[2] - s.pads_begin[2];
        const detail::IndexRange tw = detail::valid_range(sw, s.dilations[2], s.in[2], s.kernel[2]);
        const int64_t start[3] = {sd, sh, sw};
        const detail::IndexRange taps[3] = {td, th, tw};
        f((od * s.out[1] + oh) * s.out[2] + ow, start, taps);
      }
    }
  }
}

// Taps t in [0, k) with start + t*dilation < limit (start >= -pad_begin always).
int64_t taps_below(int64_t start, int64_t dilation, int64_t k, int64_t limit) {
  const int64_t room = limit - start;
  if (room <= 0) return 0;
  return std::min(k, (room + dilation - 1) / dilation);
}

}  // namespace

void max_pool_f32(const PoolGeometry& g, const float* x, float* y) {
  const detail::Spatial3 s = spatial3(g);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  for (int64_t p = 0; p < g.batch * g.channels; ++p) {
    const float* xp = x + p * in_plane;
    float* yp = y + p * out_plane;
    for_each_window(s, [&](int64_t o, const int64_t* start, const detail::IndexRange* taps) {
      float m = std::numeric_limits<float>::lowest();
      for (int64_t td = taps[0].lo; td < taps[0].hi; ++td) {
        const int64_t id = start[0] + td * s.dilations[0];
        for (int64_t th = taps[1].lo; th < taps[1].hi; ++th) {
          const int64_t ih = start[1] + th * s.dilations[1];
          const float* row = xp + (id * s.in[1] + ih) * s.in[2];
          for (int64_t tw = taps[2].lo; tw < taps[2].hi; ++tw) {
            const float v = row[start[2] + tw * s.dilations[2]];
            if (v > m) m = v;
          }
        }
      }
      yp[o] = m;
    });
  }
}

void average_pool_f32(const PoolGeometry& g, bool count_include_pad, const float* x, float* y) {
  const detail::Spatial3 s = spatial3(g);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  for (int64_t p = 0; p < g.batch * g.channels; ++p) {
    const float* xp = x + p * in_plane;
    float* yp = y + p * out_plane;
    for_each_window(s, [&](int64_t o, const int64_t* start, const detail::IndexRange* taps) {
      float sum = 0.0f;
      for (int64_t td = taps[0].lo; td < taps[0].hi; ++td) {
        const int64_t id = start[0] + td * s.dilations[0];
        for (int64_t th = taps[1].lo; th < taps[1].hi; ++th) {
          const int64_t ih = start[1] + th * s.dilations[1];
          const float* row = xp + (id * s.in[1] + ih) * s.in[2];
          for (int64_t tw = taps[2].lo; tw < taps[2].hi; ++tw) sum += row[start[2] + tw * s.dilations[2]];
        }
      }
      const int64_t inside = (taps[0].hi - taps[0].lo) * (taps[1].hi - taps[1].lo) * (taps[2].hi - taps[2].lo);
      if (inside == 0) {
        yp[o] = 0.0f;
        return;
      }
      int64_t divisor = inside;
      if (count_include_pad) {
        divisor = 1;
        for (int i = 0; i < 3; ++i) {
          divisor *= taps_below(start[i], s.dilations[i], s.kernel[i], s.in[i] + s.pads_end[i]);
        }
      }
      yp[o] = sum / static_cast<float>(divisor);
    });
  }
}

void global_average_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float* y) {
  assert(spatial >= 1);
  for (int64_t p = 0; p < N * C; ++p) {
    const float* xp = x + p * spatial;
    float sum = 0.0f;
    for (int64_t i = 0; i < spatial; ++i) sum += xp[i];
    y[p] = sum / static_cast<float>(spatial);
  }
}

void global_max_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float* y) {
  assert(spatial >= 1);
  for (int64_t p = 0; p < N * C; ++p) {
    const float* xp = x + p * spatial;
    float m = std::numeric_limits<float>::lowest();
    for (int64_t i = 0; i < spatial; ++i) {
      if (xp[i] > m) m = xp[i];
    }
    y[p] = m;
  }
}

}  // namespace quant::kernels
