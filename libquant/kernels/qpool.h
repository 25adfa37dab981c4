// Average pooling on 8-bit data: ONNX Runtime's com.microsoft
// QLinearGlobalAveragePool and QLinearAveragePool (opset 1), NCHW.
#pragma once

#include <cstdint>

#include "libquant/kernels/pool.h"
#include "libquant/kernels/requant.h"

namespace quant::kernels {

// QLinearGlobalAveragePool, in integer as MLAS computes it
// (MlasQLinearGlobalAveragePoolNchw): for each of the `planes` planes of
// `plane_size` values, acc = sum(x) - x_zero_point * plane_size in int32, then
// y = requantize(acc) with r's single multiplier, which the caller sets to
// M = x_scale / (y_scale * float(plane_size)) (float32, that order) and r's
// zero point to y's. T is uint8 or int8. Planes are split over `threads`
// threads (in_parts).
template <class T>
void qlinear_global_average_pool(const T* x, int64_t planes, int64_t plane_size, T x_zero_point, const Requantizer& r,
                                 T* y, int threads = 1);

struct QLinearPoolParams {
  float x_scale = 1, y_scale = 1;
  int32_t x_zero_point = 0, y_zero_point = 0;
};

// QLinearAveragePool. Windows are clipped to the input (no dilations); the
// divisor is the kernel's size with count_include_pad, else the number of
// taps inside the input.
//  - RequantMode::Float reproduces ONNX Runtime (qlinear_pool.cc): every input
//    is dequantized to float32 (x_scale * float(x - zx)), summed in window
//    order in float32, divided by float(count), then
//    y = saturate(round_half_to_even(sum / y_scale + float(zy))). When the
//    window is the whole input and there is no padding, ONNX Runtime takes
//    its global average pool instead, and so does this kernel.
//  - RequantMode::FixedPoint (integer-only targets): acc = sum(x - zx) in int32,
//    y = saturate(MultiplyByQuantizedMultiplier(acc, quantize_multiplier(
//    x_scale / (y_scale * count))) + zy).
// Allocates nothing. T is uint8 or int8.
template <class T>
void qlinear_average_pool(const PoolGeometry& g, bool count_include_pad, const QLinearPoolParams& p, RequantMode mode,
                          const T* x, T* y);

}  // namespace quant::kernels
