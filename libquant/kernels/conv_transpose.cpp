#include "libquant/kernels/conv_transpose.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/spatial.h"

namespace quant::kernels {

void resolve_conv_transpose_pads(AutoPad auto_pad, std::span<const int64_t> in_spatial, std::span<const int64_t> kernel,
                                 std::span<const int64_t> strides, std::span<const int64_t> dilations,
                                 std::span<const int64_t> output_padding, std::span<const int64_t> output_shape,
                                 Dims& pads_begin, Dims& pads_end, Dims& out_spatial) {
  const size_t n = in_spatial.size();
  assert(kernel.size() == n && strides.size() == n && dilations.size() == n && output_padding.size() == n);
  assert(output_shape.empty() || output_shape.size() == n);
  out_spatial.assign(n, 0);
  if (auto_pad != AutoPad::NotSet || !output_shape.empty()) {
    pads_begin.assign(n, 0);
    pads_end.assign(n, 0);
  }
  assert(pads_begin.size() == n && pads_end.size() == n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t natural = strides[i] * (in_spatial[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1;
    int64_t out;
    if (!output_shape.empty()) {
      out = output_shape[i];
    } else if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
      out = in_spatial[i] * strides[i];
    } else {
      out_spatial[i] = natural - pads_begin[i] - pads_end[i];
      continue;
    }
    // total may be negative (an output larger than natural); floor halves as
    // the ONNX reference implementation computes them.
    const int64_t total = natural - out;
    const int64_t small = detail::floor_div(total, 2), large = total - small;
    pads_begin[i] = auto_pad == AutoPad::SameUpper ? small : large;
    pads_end[i] = auto_pad == AutoPad::SameUpper ? large : small;
    out_spatial[i] = out;
  }
}

void conv_transpose_f32(const ConvTransposeGeometry& g, const float* x, const float* w, const float* bias, float* y) {
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
      const int64_t group = m / m_per_group, m_local = m % m_per_group;
      float* yp = y + (n * M + m) * out_plane;
      std::fill(yp, yp + out_plane, bias ? bias[m] : 0.0f);
      for (int64_t cc = 0; cc < c_per_group; ++cc) {
        const int64_t c = group * c_per_group + cc;
        const float* xp = x + (n * C + c) * in_plane;
        const float* wp = w + (c * m_per_group + m_local) * k_volume;
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
          // Input i reaches output i*stride + off; keep the i whose output is inside.
          const int64_t off_d = kd * s.dilations[0] - s.pads_begin[0];
          const detail::IndexRange rd = detail::valid_range(off_d, s.strides[0], s.out[0], s.in[0]);
          for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            const int64_t off_h = kh * s.dilations[1] - s.pads_begin[1];
            const detail::IndexRange rh = detail::valid_range(off_h, s.strides[1], s.out[1], s.in[1]);
            for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
              const int64_t off_w = kw * s.dilations[2] - s.pads_begin[2];
              const detail::IndexRange rw = detail::valid_range(off_w, s.strides[2], s.out[2], s.in[2]);
              const float wv = wp[(kd * s.kernel[1] + kh) * s.kernel[2] + kw];
              for (int64_t id = rd.lo; id < rd.hi; ++id) {
                const int64_t od = id * s.strides[0] + off_d;
                for (int64_t ih = rh.lo; ih < rh.hi; ++ih) {
                  const int64_t oh = ih * s.strides[1] + off_h;
                  const float* xrow = xp + (id * s.in[1] + ih) * s.in[2];
                  float* yrow = yp + (od * s.out[1] + oh) * s.out[2];
                  const int64_t sw = s.strides[2];
                  for (int64_t iw = rw.lo; iw < rw.hi; ++iw) yrow[iw * sw + off_w] += wv * xrow[iw];
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
