// Quantization of activations at run time (dynamic quantization): the range
// is measured on the tensor itself, no profile involved.
#pragma once

#include <cstdint>

namespace quant::kernels {

// ONNX DynamicQuantizeLinear (opset 11), uint8 output:
//   x_min = min(0, min(x)), x_max = max(0, max(x))
//   scale = (x_max - x_min) / 255
//   zero_point = saturate(round_half_to_even(0 - x_min / scale))
//   y = saturate(round_half_to_even(x / scale) + zero_point)
// in float32, as the spec's reference and ONNX Runtime's CPU kernel compute it.
// NaN elements are ignored for the range. A tensor of zeros (scale 0, which the
// spec leaves undefined) gets scale 0, zero point 0 and y = 0: it dequantizes to
// the zeros it came from. y may not alias x. Allocates nothing.
void dynamic_quantize_linear_u8(const float* x, int64_t count, uint8_t* y, float* scale, uint8_t* zero_point);

// Per-row asymmetric int8 quantization, torchao's per-token activation
// quantization of the Int8DynActInt4Weight scheme
// (choose_qparams_per_token_asymmetric): for each of `rows` rows of `cols`
// values, range widened to include 0, scale = (max - min) / 255 (at least
// float32 epsilon, as torchao clamps it), zero_point = clamp(round(-128 - min / scale),
// -128, 127), q = saturate(round_half_to_even(x / scale) + zero_point).
// NaN maps to the zero point. Allocates nothing; q may not alias x.
void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int8_t* q, float* scales, int32_t* zero_points);

}  // namespace quant::kernels
