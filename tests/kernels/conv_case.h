// One convolution shape of the integer conv tests' sweeps, and its ConvGeometry.
#pragma once

#include <cstdint>

#include "libquant/core/tensor.h"
#include "libquant/kernels/conv.h"

namespace quant::testing {

struct ConvCase {
  int64_t batch, in_channels, out_channels, group;
  quant::Dims in, kernel, strides, dilations, pads_begin, pads_end;
};

inline kernels::ConvGeometry geometry(const ConvCase& c) {
  kernels::ConvGeometry g;
  g.batch = c.batch, g.in_channels = c.in_channels, g.out_channels = c.out_channels, g.group = c.group;
  g.in_spatial = c.in, g.kernel = c.kernel, g.strides = c.strides, g.dilations = c.dilations;
  g.pads_begin = c.pads_begin, g.pads_end = c.pads_end;
  kernels::resolve_conv_pads(kernels::AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin,
                             g.pads_end, g.out_spatial);
  return g;
}

}  // namespace quant::testing
