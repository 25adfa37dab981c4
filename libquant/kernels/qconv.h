// Integer N-d convolution (1 to 3 spatial dims, NCHW, groups / depthwise,
// pads, strides, dilations) on top of qgemm: ONNX ConvInteger (opset 10,
// int32 output) and QLinearConv (opset 10, requantized output).
//
//   acc[n, m, o...] = sum_{c, k...} (x[n, g*C/G + c, o*s + k*d - pad] - x_zp)
//                                   * (w[m, c, k...] - w_zp[m])
//
// Padding contributes zero (a padded input equals x_zp). The kernel works
// per image and group on tiles of output pixels: the tile's input patches are
// gathered into a [pixels x C/G*k...] matrix ("im2row", padded taps filled
// with x_zp) that qgemm multiplies by the group's weights [M/G x C/G*k...]
// (BLayout::NxK, per-column zero points = per output channel), then the
// [pixels x M/G] accumulators are written to NCHW. Allocates nothing: the
// caller passes qconv_workspace_bytes() of scratch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/requant.h"

namespace quant::kernels {

// The integer operands. w_zero_point has w_zero_point_count entries: 0 (zero
// point 0), 1 (per tensor) or out_channels (per output channel).
// Instantiated for (TX, TW) = (uint8, int8), (uint8, uint8), (int8, int8),
// (int8, uint8).
template <class TX, class TW>
struct QConvArgs {
  const TX* x = nullptr;
  TX x_zero_point = 0;
  const TW* w = nullptr;
  const TW* w_zero_point = nullptr;
  int64_t w_zero_point_count = 0;
};

// Bytes of scratch memory qconv_s32 / qlinear_conv need for geometry g
// (independent of the batch size). Alignment: the start must be aligned for
// int32_t.
size_t qconv_workspace_bytes(const ConvGeometry& g);

// ConvInteger: y[N, M, out...] = acc as int32. y may not alias x or w.
template <class TX, class TW>
void qconv_s32(const ConvGeometry& g, const QConvArgs<TX, TW>& args, int32_t* y, void* workspace);

// QLinearConv: y = requantize(acc + bias[m]) with the output channel m as the
// Requantizer's channel (bias may be null). TY is uint8 or int8.
template <class TX, class TW, class TY>
void qlinear_conv(const ConvGeometry& g, const QConvArgs<TX, TW>& args, const int32_t* bias, const Requantizer& r,
                  TY* y, void* workspace);

}  // namespace quant::kernels
