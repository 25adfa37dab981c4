// N-d transposed convolution (1 to 3 spatial dims), ONNX ConvTranspose
// (opset 11), NCHW layout.
#pragma once

#include <cstdint>
#include <span>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// Fully resolved geometry: one entry per spatial dim in every Dims. strides
// and dilations >= 1; pads may be negative when an explicit output_shape is
// larger than the natural output (the extra rows then receive only bias).
// in_channels and out_channels are both divisible by group; the weight is
// [in_channels, out_channels / group, kernel...].
struct ConvTransposeGeometry {
  int64_t batch = 1, in_channels = 0, out_channels = 0, group = 1;
  Dims in_spatial, kernel, strides, dilations, pads_begin, pads_end, out_spatial;
};

// Resolves pads and the output spatial shape of ConvTranspose-11. With
// k_eff = (k-1)*dilation + 1 and natural = stride*(in-1) + output_padding + k_eff:
//  - output_shape given (spatial dims): out = output_shape; the total pad
//    natural - out is halved with floor(total / 2) at the beginning for
//    SAME_UPPER and at the end otherwise, the rest on the other side (the
//    ConvTranspose-11 spec text and the ONNX reference implementation; ONNX
//    Runtime puts the smaller half first for NOTSET too). A negative total
//    (an output larger than natural) gives negative pads: the extra rows get
//    only bias.
//  - else NotSet: pads_begin/pads_end are inputs; out = natural - pad_begin - pad_end.
//  - else Valid: pads 0, out = natural.
//  - else SameUpper/SameLower: out = in * stride, pads as for output_shape.
// An out_spatial entry < 1 means the caller must reject the node.
void resolve_conv_transpose_pads(AutoPad auto_pad, std::span<const int64_t> in_spatial, std::span<const int64_t> kernel,
                                 std::span<const int64_t> strides, std::span<const int64_t> dilations,
                                 std::span<const int64_t> output_padding, std::span<const int64_t> output_shape,
                                 Dims& pads_begin, Dims& pads_end, Dims& out_spatial);

// y[N, M, out...] = sum over c, k of x[N, c, i...] * w[c, m, k...] at
// o = i*stride + k*dilation - pad_begin (when inside the output), + bias[m]
// (bias may be null). Direct loops; allocates nothing; y must not alias x.
void conv_transpose_f32(const ConvTransposeGeometry& g, const float* x, const float* w, const float* bias, float* y);

}  // namespace quant::kernels
