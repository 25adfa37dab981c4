// Depthwise convolution (one input and one output channel per group, as in
// MobileNet): a GEMM would have M = 1, so it runs as direct loops instead.
// 3x3 kernels with row stride 1 or 2 (MobileNet's) take the register-blocked
// plane kernels of conv_depthwise_3x3.h; other 2-D shapes with column stride
// 1 or 2 the AVX-512 or AVX2 plane kernels of conv_depthwise_rows.h; the rest
// accumulates each output row in place tap by tap (it stays in L1), with an
// AVX2 row update for strides 1 and 2 when the CPU has it.
#include <algorithm>
#include <cassert>
#include <vector>

#include "libquant/kernels/conv_depthwise_3x3.h"
#include "libquant/kernels/conv_depthwise_rows.h"
#include "libquant/kernels/conv_fast.h"
#include "libquant/kernels/eltwise_f32.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"
#include "libquant/kernels/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_HAVE_AVX2_PATH 1
#endif

namespace quant::kernels {
namespace {

// y[i] += w * x[i * stride] for i in [0, n).
using RowUpdate = void (*)(float* y, const float* x, int64_t stride, float w, int64_t n);

void row_update_portable(float* y, const float* x, int64_t stride, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i * stride];
}

#ifdef QTOOL_HAVE_AVX2_PATH
__attribute__((target("avx2,fma"))) void row_update_avx2(float* y, const float* x, int64_t stride, float w, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t i = 0;
  if (stride == 1) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  } else if (stride == 2) {
    // x[2i] for 8 consecutive i: even lanes of two loads, put back in order.
    // The loads reach x[2i+15], one past the last element this block needs
    // (x[2i+14]); it is inside the row only if another output follows: i+9 <= n.
    for (; i + 9 <= n; i += 8) {
      const __m256 lo = _mm256_loadu_ps(x + 2 * i), hi = _mm256_loadu_ps(x + 2 * i + 8);
      const __m256 even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 ordered = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
      _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, ordered, _mm256_loadu_ps(y + i)));
    }
  }
  for (; i < n; ++i) y[i] += w * x[i * stride];
}
#endif

RowUpdate pick_row_update() {
#ifdef QTOOL_HAVE_AVX2_PATH
  if (cpu_supports("avx2") && cpu_supports("fma")) return row_update_avx2;
#endif
  return row_update_portable;
}

}  // namespace

void conv_f32_depthwise(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, int threads,
                        const ConvActivation& act_in) {
  assert(g.group == g.in_channels && g.group == g.out_channels);
  // A fused residual is added (then clamped) per plane after the convolution.
  ConvActivation act = act_in;
  if (act_in.residual) act = ConvActivation{};
  static const RowUpdate row_update = pick_row_update();
  static const IsaCap plane_level = detail::depthwise_plane_level();
  const detail::Spatial3 s =
      detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t k_volume = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int64_t C = g.in_channels;
  static const std::vector<const detail::Depthwise3x3Isa*> isas_3x3 = detail::supported_depthwise_3x3_isas();
  const bool plane_3x3 = !isas_3x3.empty() && s.in[0] == 1 && s.out[0] == 1 && s.kernel[0] == 1 && s.kernel[1] == 3 && s.kernel[2] == 3 &&
                         s.dilations[1] == 1 && s.dilations[2] == 1 && (s.strides[2] == 1 || s.strides[2] == 2);
  // One channel plane of one image.
  const auto conv_plane = [&](const float* xp, const float* wp, float* yp, float b) {
    if (plane_3x3) {
      isas_3x3.back()->kernel(detail::Depthwise3x3Plane{xp, yp, wp, s.in[1], s.in[2], s.out[1], s.out[2], s.strides[1],
                                                        s.strides[2], s.pads_begin[1], s.pads_begin[2], b, act.clamp,
                                                        act.lo, act.hi});
      return;
    }
    // Other 2-D kernels: the vector plane kernels where they fit (strides 1
    // and 2 along the row; a 3-D input, even with kernel depth 1, takes the
    // loops below).
    if (plane_level != IsaCap::Portable && s.in[0] == 1 && s.out[0] == 1 && s.kernel[0] == 1 &&
        detail::depthwise_plane(plane_level,
                                detail::DepthwisePlane{xp, yp, wp, s.in[1], s.in[2], s.out[1], s.out[2], s.kernel[1],
                                                       s.kernel[2], s.strides[1], s.strides[2], s.dilations[1],
                                                       s.dilations[2], s.pads_begin[1], s.pads_begin[2], b, act.clamp,
                                                       act.lo, act.hi}))
      return;
    for (int64_t od = 0; od < s.out[0]; ++od) {
      for (int64_t oh = 0; oh < s.out[1]; ++oh) {
        float* yrow = yp + (od * s.out[1] + oh) * s.out[2];
        std::fill(yrow, yrow + s.out[2], b);
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
          const int64_t id = od * s.strides[0] + kd * s.dilations[0] - s.pads_begin[0];
          if (id < 0 || id >= s.in[0]) continue;
          for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            const int64_t ih = oh * s.strides[1] + kh * s.dilations[1] - s.pads_begin[1];
            if (ih < 0 || ih >= s.in[1]) continue;
            const float* xrow = xp + (id * s.in[1] + ih) * s.in[2];
            for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
              const int64_t off_w = kw * s.dilations[2] - s.pads_begin[2];
              const detail::IndexRange rw = detail::valid_range(off_w, s.strides[2], s.in[2], s.out[2]);
              if (rw.hi <= rw.lo) continue;
              row_update(yrow + rw.lo, xrow + rw.lo * s.strides[2] + off_w, s.strides[2],
                         wp[(kd * s.kernel[1] + kh) * s.kernel[2] + kw], rw.hi - rw.lo);
            }
          }
        }
        if (act.clamp)
          for (int64_t ow = 0; ow < s.out[2]; ++ow) yrow[ow] = std::min(std::max(yrow[ow], act.lo), act.hi);
      }
    }
  };
  const auto add_residual = [&](int64_t plane) {
    float* yp = y + plane * out_plane;
    if (act_in.residual)
      add_f32(yp, act_in.residual + plane * out_plane, yp, out_plane, act_in.clamp, act_in.lo, act_in.hi, 1);
  };
  // Blocks of channels where the block kernel serves the geometry; the
  // channels past the last whole block go plane by plane.
  const detail::Depthwise3x3Plane shape{nullptr, nullptr, nullptr, s.in[1], s.in[2], s.out[1], s.out[2], s.strides[1],
                                        s.strides[2], s.pads_begin[1], s.pads_begin[2], 0.0f, act.clamp, act.lo, act.hi};
  const detail::Depthwise3x3Isa* isa = plane_3x3 ? isas_3x3.back() : nullptr;
  const int64_t block = isa && isa->block_kernel && isa->block_fits(shape) ? isa->block : 0;
  if (block > 0) {
    const int64_t blocks = C / block, rest = C - blocks * block;
    parallel_for(threads, g.batch * (blocks + rest), [&](int64_t task) {
      const int64_t n = task / (blocks + rest), b = task % (blocks + rest);
      if (b >= blocks) {
        const int64_t c = blocks * block + (b - blocks), plane = n * C + c;
        conv_plane(x + plane * in_plane, w + c * k_volume, y + plane * out_plane, bias ? bias[c] : 0.0f);
        add_residual(plane);
        return;
      }
      const int64_t c0 = b * block, plane0 = n * C + c0;
      detail::Depthwise3x3Channels ch{shape, in_plane, out_plane, bias ? bias + c0 : nullptr};
      ch.plane.x = x + plane0 * in_plane;
      ch.plane.y = y + plane0 * out_plane;
      ch.plane.w = w + c0 * k_volume;
      isa->block_kernel(ch);
      for (int64_t i = 0; i < block; ++i) add_residual(plane0 + i);
    });
    return;
  }
  parallel_for(threads, g.batch * C, [&](int64_t plane) {
    const int64_t c = plane % C;
    conv_plane(x + plane * in_plane, w + c * k_volume, y + plane * out_plane, bias ? bias[c] : 0.0f);
    add_residual(plane);
  });
}

}  // namespace quant::kernels
