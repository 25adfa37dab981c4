// The sizes both integer convolutions (qconv.cpp, the reference; qconv_fast.cpp)
// derive from a ConvGeometry, computed in one place.
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

}  // namespace quant::kernels::detail
