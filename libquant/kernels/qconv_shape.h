// The sizes the integer convolutions (qconv.cpp, the reference; qconv_fast.cpp;
// qwide.cpp) derive from a ConvGeometry, computed in one place, and their
// im2row gather.
#pragma once

#include <cstdint>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/spatial.h"

namespace quant::kernels::detail {

struct QConvShape {
  Spatial3 s;
  int64_t group_in = 0, group_out = 0;  // channels per group
  int64_t taps = 0;                      // k0 * k1 * k2
  int64_t reduction = 0;                 // group_in * taps: the GEMM's K
  int64_t in_plane = 0, out_plane = 0;   // pixels of one input / output channel
};

inline QConvShape qconv_shape(const ConvGeometry& g) {
  QConvShape c;
  c.s = to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  c.group_in = g.in_channels / g.group;
  c.group_out = g.out_channels / g.group;
  c.taps = c.s.kernel[0] * c.s.kernel[1] * c.s.kernel[2];
  c.reduction = c.group_in * c.taps;
  c.in_plane = c.s.in[0] * c.s.in[1] * c.s.in[2];
  c.out_plane = c.s.out[0] * c.s.out[1] * c.s.out[2];
  return c;
}

// Rows [p0, p0 + count) of the im2row matrix of one image and group: row i
// holds, for output pixel p0 + i, the input values under the kernel in the
// weight order (c, k0, k1, k2); taps in the padding read x_zero_point.
template <class TX>
inline void gather_patches(const QConvShape& c, const TX* x, TX x_zero_point, int64_t p0, int64_t count, TX* patches) {
  const Spatial3& s = c.s;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = p0 + i;
    const int64_t o2 = p % s.out[2], o1 = (p / s.out[2]) % s.out[1], o0 = p / (s.out[2] * s.out[1]);
    TX* row = patches + i * c.reduction;
    for (int64_t ch = 0; ch < c.group_in; ++ch) {
      const TX* plane = x + ch * c.in_plane;
      for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0) {
        const int64_t i0 = o0 * s.strides[0] + k0 * s.dilations[0] - s.pads_begin[0];
        const bool in0 = i0 >= 0 && i0 < s.in[0];
        for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1) {
          const int64_t i1 = o1 * s.strides[1] + k1 * s.dilations[1] - s.pads_begin[1];
          const bool in1 = in0 && i1 >= 0 && i1 < s.in[1];
          const TX* line = in1 ? plane + (i0 * s.in[1] + i1) * s.in[2] : nullptr;
          for (int64_t k2 = 0; k2 < s.kernel[2]; ++k2) {
            const int64_t i2 = o2 * s.strides[2] + k2 * s.dilations[2] - s.pads_begin[2];
            *row++ = (in1 && i2 >= 0 && i2 < s.in[2]) ? line[i2] : x_zero_point;
          }
        }
      }
    }
  }
}

}  // namespace quant::kernels::detail
