// N-d convolution (1 to 3 spatial dims), ONNX Conv (opset 11), NCHW layout.
#pragma once

#include <cstdint>
#include <span>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// Fully resolved Conv geometry. Every Dims has one entry per spatial dim
// (1 to 3), ordered as in the tensor (e.g. [H, W]). strides and dilations are
// >= 1, pads >= 0, and out_spatial is what resolve_conv_pads produced.
// in_channels and out_channels are both divisible by group.
struct ConvGeometry {
  int64_t batch = 1, in_channels = 0, out_channels = 0, group = 1;
  Dims in_spatial, kernel, strides, dilations, pads_begin, pads_end, out_spatial;
};

// Resolves padding and the output spatial shape of ONNX Conv (opset 11):
//  - NotSet: pads_begin/pads_end are inputs (the `pads` attribute split in two);
//    out = floor((in + pad_begin + pad_end - ((k-1)*dilation + 1)) / stride) + 1.
//  - Valid: pads become 0, same formula.
//  - SameUpper/SameLower: out = ceil(in / stride); total pad =
//    max(0, (out-1)*stride + (k-1)*dilation + 1 - in), split in half with the
//    odd element at the end (SameUpper) or at the beginning (SameLower).
// All spans have one entry per spatial dim. An out_spatial entry < 1 means the
// (dilated) kernel does not fit the padded input: the caller must reject it.
void resolve_conv_pads(AutoPad auto_pad, std::span<const int64_t> in_spatial, std::span<const int64_t> kernel,
                       std::span<const int64_t> strides, std::span<const int64_t> dilations, Dims& pads_begin,
                       Dims& pads_end, Dims& out_spatial);

// y[N, M, out...] = conv(x[N, C, in...], w[M, C/group, k...]) + bias[M].
// bias may be null (no bias). Padding contributes zeros. Direct loops (each
// kernel tap accumulates a shifted input plane into the output plane), so it
// needs no scratch and allocates nothing. y must not alias x.
void conv_f32(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y);

}  // namespace quant::kernels
