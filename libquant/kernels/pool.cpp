#include "libquant/kernels/pool.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/cpu.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "libquant/kernels/transpose_avx2.h"
#define QTOOL_POOL_X86 1
#endif

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

template <class T>
void max_pool(const PoolGeometry& g, const T* x, T* y, int64_t* indices, bool column_major) {
  const detail::Spatial3 s = spatial3(g);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  // Offsets of a step along each (3-D normalised) spatial dim for the Indices
  // output; the unit leading dims of 1-D/2-D inputs never move.
  const int64_t lead = 3 - static_cast<int64_t>(g.in_spatial.size());
  int64_t step[3] = {s.in[1] * s.in[2], s.in[2], 1};
  if (column_major) {
    int64_t stride = 1;
    for (int64_t i = lead; i < 3; ++i) {
      step[i] = stride;
      stride *= s.in[i];
    }
  }
  for (int64_t p = 0; p < g.batch * g.channels; ++p) {
    const T* xp = x + p * in_plane;
    T* yp = y + p * out_plane;
    int64_t* ip = indices ? indices + p * out_plane : nullptr;
    for_each_window(s, [&](int64_t o, const int64_t* start, const detail::IndexRange* taps) {
      T m = std::numeric_limits<T>::lowest();
      int64_t at = -1;
      for (int64_t td = taps[0].lo; td < taps[0].hi; ++td) {
        const int64_t id = start[0] + td * s.dilations[0];
        for (int64_t th = taps[1].lo; th < taps[1].hi; ++th) {
          const int64_t ih = start[1] + th * s.dilations[1];
          const T* row = xp + (id * s.in[1] + ih) * s.in[2];
          for (int64_t tw = taps[2].lo; tw < taps[2].hi; ++tw) {
            const int64_t iw = start[2] + tw * s.dilations[2];
            if (row[iw] > m || at < 0) {
              // The first tap sets the index even when it does not beat
              // lowest() (or is NaN), so every window reports a position.
              if (row[iw] > m) m = row[iw];
              at = id * step[0] + ih * step[1] + iw * step[2];
            }
          }
        }
      }
      yp[o] = m;
      if (ip) ip[o] = at < 0 ? -1 : p * in_plane + at;
    });
  }
}

template void max_pool<float>(const PoolGeometry&, const float*, float*, int64_t*, bool);
template void max_pool<double>(const PoolGeometry&, const double*, double*, int64_t*, bool);
template void max_pool<int8_t>(const PoolGeometry&, const int8_t*, int8_t*, int64_t*, bool);
template void max_pool<uint8_t>(const PoolGeometry&, const uint8_t*, uint8_t*, int64_t*, bool);

void max_pool_f32(const PoolGeometry& g, const float* x, float* y) { max_pool<float>(g, x, y, nullptr, false); }

void lp_pool_f32(const PoolGeometry& g, float p, const float* x, float* y) {
  const detail::Spatial3 s = spatial3(g);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  for (int64_t c = 0; c < g.batch * g.channels; ++c) {
    const float* xp = x + c * in_plane;
    float* yp = y + c * out_plane;
    for_each_window(s, [&](int64_t o, const int64_t* start, const detail::IndexRange* taps) {
      double sum = 0.0;
      for (int64_t td = taps[0].lo; td < taps[0].hi; ++td) {
        const int64_t id = start[0] + td * s.dilations[0];
        for (int64_t th = taps[1].lo; th < taps[1].hi; ++th) {
          const int64_t ih = start[1] + th * s.dilations[1];
          const float* row = xp + (id * s.in[1] + ih) * s.in[2];
          for (int64_t tw = taps[2].lo; tw < taps[2].hi; ++tw)
            sum += std::pow(std::fabs(static_cast<double>(row[start[2] + tw * s.dilations[2]])), static_cast<double>(p));
        }
      }
      yp[o] = static_cast<float>(std::pow(sum, 1.0 / static_cast<double>(p)));
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

namespace {

#if defined(QTOOL_POOL_X86)
// Eight planes' sums, each in its own lane and in order: eight values of
// each plane (one load per plane), transposed so that vector k holds every
// plane's k-th value, added one vector after another. The adds per plane
// are the scalar loop's, so are the bits. The values past the last eight go
// on in scalar code. ONNX Runtime's NCHWc GlobalAveragePool sums a channel
// in the same order (channels in lanes, pixels one after another).
__attribute__((target("avx2"))) void sum_eight_planes_avx2(const float* xp, int64_t spatial, float* sums) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= spatial; i += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(xp + j * spatial + i);
    detail::transpose8(r);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) acc = _mm256_add_ps(acc, r[k]);
  }
  _mm256_storeu_ps(sums, acc);
  for (; i < spatial; ++i)
    for (int64_t j = 0; j < 8; ++j) sums[j] += xp[j * spatial + i];
}
#endif

void sum_eight_planes(const float* xp, int64_t spatial, float* sums) {
#if defined(QTOOL_POOL_X86)
  static const bool avx2 = cpu_supports("avx2");
  if (avx2) return sum_eight_planes_avx2(xp, spatial, sums);
#endif
  // Eight chains side by side keep the adders busy where one plane's sum
  // would wait on every add before it (mobilenet_v2's 1280 planes of 7 x 7,
  // one thread: 19 us as one chain, 13 as eight).
  for (int64_t j = 0; j < 8; ++j) sums[j] = 0.0f;
  for (int64_t i = 0; i < spatial; ++i)
    for (int64_t j = 0; j < 8; ++j) sums[j] += xp[j * spatial + i];
}

}  // namespace

void global_average_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float* y, int threads) {
  assert(spatial >= 1);
  // Each plane summed in order (ONNX Runtime's order, see above), eight
  // planes at a time: the threads take runs of whole groups of eight (runs
  // of 4 planes went one plane at a time, 3.7x slower on 2 threads than on
  // 1 for efficientnet_b0's 32 planes of 112 x 112).
  const int64_t planes = N * C;
  in_parts((planes + 7) / 8, threads, [&](int64_t first, int64_t count) {
    for (int64_t p = 8 * first; p < std::min(planes, 8 * (first + count));) {
      if (p + 8 <= planes) {
        float sum[8];
        sum_eight_planes(x + p * spatial, spatial, sum);
        for (int64_t j = 0; j < 8; ++j) y[p + j] = sum[j] / static_cast<float>(spatial);
        p += 8;
        continue;
      }
      const float* xp = x + p * spatial;
      float sum = 0.0f;
      for (int64_t i = 0; i < spatial; ++i) sum += xp[i];
      y[p++] = sum / static_cast<float>(spatial);
    }
  });
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

void global_lp_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float p, float* y) {
  for (int64_t c = 0; c < N * C; ++c) {
    const float* xp = x + c * spatial;
    double sum = 0.0;
    for (int64_t i = 0; i < spatial; ++i) sum += std::pow(std::fabs(static_cast<double>(xp[i])), static_cast<double>(p));
    y[c] = static_cast<float>(std::pow(sum, 1.0 / static_cast<double>(p)));
  }
}

void max_unpool_f32(const float* x, const int64_t* indices, int64_t x_count, float* y, int64_t y_count) {
  std::fill(y, y + y_count, 0.0f);
  for (int64_t i = 0; i < x_count; ++i) {
    assert(indices[i] >= 0 && indices[i] < y_count);
    y[indices[i]] = x[i];
  }
}

}  // namespace quant::kernels
