#include "libquant/kernels/conv.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/spatial.h"

namespace quant::kernels {

void resolve_conv_pads(AutoPad auto_pad, std::span<const int64_t> in_spatial, std::span<const int64_t> kernel,
                       std::span<const int64_t> strides, std::span<const int64_t> dilations, Dims& pads_begin,
                       Dims& pads_end, Dims& out_spatial) {
  const size_t n = in_spatial.size();
  assert(kernel.size() == n && strides.size() == n && dilations.size() == n);
  out_spatial.assign(n, 0);
  if (auto_pad == AutoPad::NotSet) {
    assert(pads_begin.size() == n && pads_end.size() == n);
  } else {
    pads_begin.assign(n, 0);
    pads_end.assign(n, 0);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = in_spatial[i], s = strides[i];
    const int64_t k_eff = (kernel[i] - 1) * dilations[i] + 1;
    assert(s >= 1);
    if (auto_pad == AutoPad::NotSet || auto_pad == AutoPad::Valid) {
      out_spatial[i] = detail::floor_div(in + pads_begin[i] + pads_end[i] - k_eff, s) + 1;
      continue;
    }
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + k_eff - in);
    const int64_t small = total / 2, large = total - total / 2;
    pads_begin[i] = auto_pad == AutoPad::SameUpper ? small : large;
    pads_end[i] = auto_pad == AutoPad::SameUpper ? large : small;
    out_spatial[i] = out;
  }
}

void conv_f32(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  const detail::Spatial3 s =
      detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  assert(g.group >= 1 && g.in_channels % g.group == 0 && g.out_channels % g.group == 0);
  const int64_t C = g.in_channels, M = g.out_channels;
  const int64_t c_per_group = C / g.group, m_per_group = M / g.group;
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t k_volume = s.kernel[0] * s.kernel[1] * s.kernel[2];

  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t group = m / m_per_group;
      float* yp = y + (n * M + m) * out_plane;
      std::fill(yp, yp + out_plane, bias ? bias[m] : 0.0f);
      for (int64_t cc = 0; cc < c_per_group; ++cc) {
        const float* xp = x + (n * C + group * c_per_group + cc) * in_plane;
        const float* wp = w + (m * c_per_group + cc) * k_volume;
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
          const int64_t off_d = kd * s.dilations[0] - s.pads_begin[0];
          const detail::IndexRange rd = detail::valid_range(off_d, s.strides[0], s.in[0], s.out[0]);
          for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            const int64_t off_h = kh * s.dilations[1] - s.pads_begin[1];
            const detail::IndexRange rh = detail::valid_range(off_h, s.strides[1], s.in[1], s.out[1]);
            for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
              const int64_t off_w = kw * s.dilations[2] - s.pads_begin[2];
              const detail::IndexRange rw = detail::valid_range(off_w, s.strides[2], s.in[2], s.out[2]);
              const float wv = wp[(kd * s.kernel[1] + kh) * s.kernel[2] + kw];
              // Outputs whose tap falls in the padding receive nothing (padding is zero).
              for (int64_t od = rd.lo; od < rd.hi; ++od) {
                const int64_t id = od * s.strides[0] + off_d;
                for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
                  const int64_t ih = oh * s.strides[1] + off_h;
                  const float* xrow = xp + (id * s.in[1] + ih) * s.in[2];
                  float* yrow = yp + (od * s.out[1] + oh) * s.out[2];
                  const int64_t sw = s.strides[2];
                  for (int64_t ow = rw.lo; ow < rw.hi; ++ow) yrow[ow] += wv * xrow[ow * sw + off_w];
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace quant::kernels
