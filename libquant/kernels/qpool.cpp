#include "libquant/kernels/qpool.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {

template <class T>
void qlinear_global_average_pool(const T* x, int64_t planes, int64_t plane_size, T x_zero_point, const Requantizer& r,
                                 T* y, int threads) {
  assert(r.count() == 1);
  const uint32_t bias = static_cast<uint32_t>(-static_cast<int64_t>(x_zero_point) * plane_size);
  in_parts(planes, threads, [&](int64_t first, int64_t count) {
    for (int64_t p = first; p < first + count; ++p) {
      const T* v = x + p * plane_size;
      // int32 arithmetic as MLAS, wrapping defined; 16 partial sums (a loop
      // of fixed length, which GCC vectorizes at -O2), then the tail.
      uint32_t part[16] = {};
      int64_t i = 0;
      for (; i + 16 <= plane_size; i += 16)
        for (int j = 0; j < 16; ++j) part[j] += static_cast<uint32_t>(static_cast<int32_t>(v[i + j]));
      uint32_t sum = bias;
      for (int j = 0; j < 16; ++j) sum += part[j];
      for (; i < plane_size; ++i) sum += static_cast<uint32_t>(static_cast<int32_t>(v[i]));
      y[p] = requantize_one<T>(static_cast<int32_t>(sum), r, 0);
    }
  });
}

namespace {

template <class T>
T quantize_pool_output(float v, const QLinearPoolParams& p) {
  constexpr int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const float q = std::nearbyint(v / p.y_scale + static_cast<float>(p.y_zero_point));
  return static_cast<T>(static_cast<int32_t>(std::min(std::max(q, static_cast<float>(lo)), static_cast<float>(hi))));
}

}  // namespace

template <class T>
void qlinear_average_pool(const PoolGeometry& g, bool count_include_pad, const QLinearPoolParams& p, RequantMode mode,
                          const T* x, T* y) {
  const detail::Spatial3 s = detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations,
                                                 g.pads_begin, g.pads_end);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t kernel_size = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const bool no_pads = std::all_of(g.pads_begin.begin(), g.pads_begin.end(), [](int64_t v) { return v == 0; }) &&
                       std::all_of(g.pads_end.begin(), g.pads_end.end(), [](int64_t v) { return v == 0; });
  if (mode == RequantMode::Float && no_pads && g.kernel == g.in_spatial) {
    const float m = p.x_scale / (p.y_scale * static_cast<float>(in_plane));
    const Requantizer r = make_requantizer(RequantMode::Float, std::span<const float>(&m, 1), p.y_zero_point);
    for (int64_t c = 0; c < g.batch * g.channels; ++c)
      qlinear_global_average_pool<T>(x + c * in_plane, 1, in_plane, static_cast<T>(p.x_zero_point), r,
                                     y + c * out_plane);
    return;
  }
  float dequantized[256];
  for (int i = 0; i < 256; ++i) {
    const T v = static_cast<T>(static_cast<uint8_t>(i));
    dequantized[i] = p.x_scale * static_cast<float>(static_cast<int32_t>(v) - p.x_zero_point);
  }
  for (int64_t c = 0; c < g.batch * g.channels; ++c) {
    const T* xp = x + c * in_plane;
    T* yp = y + c * out_plane;
    for (int64_t o0 = 0; o0 < s.out[0]; ++o0) {
      const int64_t b0 = o0 * s.strides[0] - s.pads_begin[0];
      const int64_t s0 = std::max<int64_t>(b0, 0), e0 = std::min(b0 + s.kernel[0], s.in[0]);
      for (int64_t o1 = 0; o1 < s.out[1]; ++o1) {
        const int64_t b1 = o1 * s.strides[1] - s.pads_begin[1];
        const int64_t s1 = std::max<int64_t>(b1, 0), e1 = std::min(b1 + s.kernel[1], s.in[1]);
        for (int64_t o2 = 0; o2 < s.out[2]; ++o2) {
          const int64_t b2 = o2 * s.strides[2] - s.pads_begin[2];
          const int64_t s2 = std::max<int64_t>(b2, 0), e2 = std::min(b2 + s.kernel[2], s.in[2]);
          const int64_t inside = std::max<int64_t>(e0 - s0, 0) * std::max<int64_t>(e1 - s1, 0) *
                                 std::max<int64_t>(e2 - s2, 0);
          const int64_t count = count_include_pad ? kernel_size : inside;
          float fsum = 0.0f;
          int32_t isum = 0;
          for (int64_t i0 = s0; i0 < e0; ++i0)
            for (int64_t i1 = s1; i1 < e1; ++i1)
              for (int64_t i2 = s2; i2 < e2; ++i2) {
                const T v = xp[(i0 * s.in[1] + i1) * s.in[2] + i2];
                fsum += dequantized[static_cast<uint8_t>(v)];
                isum += static_cast<int32_t>(v) - p.x_zero_point;
              }
          T& out = yp[(o0 * s.out[1] + o1) * s.out[2] + o2];
          if (mode == RequantMode::Float) {
            out = quantize_pool_output<T>(count > 0 ? fsum / static_cast<float>(count) : 0.0f, p);
          } else {
            const double m = count > 0 ? static_cast<double>(p.x_scale) / (static_cast<double>(p.y_scale) * count) : 0.0;
            const int64_t v = int64_t{multiply_by_quantized_multiplier(isum, quantize_multiplier(m))} + p.y_zero_point;
            out = static_cast<T>(std::clamp<int64_t>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
          }
        }
      }
    }
  }
}

template void qlinear_global_average_pool<uint8_t>(const uint8_t*, int64_t, int64_t, uint8_t, const Requantizer&,
                                                   uint8_t*, int);
template void qlinear_global_average_pool<int8_t>(const int8_t*, int64_t, int64_t, int8_t, const Requantizer&, int8_t*,
                                                  int);
template void qlinear_average_pool<uint8_t>(const PoolGeometry&, bool, const QLinearPoolParams&, RequantMode,
                                            const uint8_t*, uint8_t*);
template void qlinear_average_pool<int8_t>(const PoolGeometry&, bool, const QLinearPoolParams&, RequantMode,
                                           const int8_t*, int8_t*);

}  // namespace quant::kernels
