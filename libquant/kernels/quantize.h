// ONNX QuantizeLinear / DequantizeLinear (opset 13 per-tensor and per-axis,
// opset 21 blocked), the numerics fixed in DESIGN.md.
#pragma once

#include <cstdint>

namespace quant::kernels {

// Layout shared by both kernels. x and y are viewed as [outer, axis_len,
// inner] around the quantization axis (outer = prod(dims before axis), inner =
// prod(dims after axis); any split works for per-tensor). scale_count is the
// number of elements of scale (and of zero_point when present):
//  - per-tensor: block_size = 0, scale_count = 1;
//  - per-axis (opset 13): block_size = 0, scale_count = axis_len, parameter
//    index = position along the axis;
//  - blocked (opset 21 block_size): block_size > 0, scale has x's shape with the
//    axis dimension replaced by nb = ceil(axis_len / block_size), so
//    scale_count = outer * nb * inner and element (o, a, i) uses parameter
//    (o * nb + a / block_size) * inner + i.
// zero_point is null when absent (zero point 0). Scales are assumed non-zero
// and finite (callers validate). y may not alias x. Allocates nothing.

// q = saturate(round_half_to_even(x / scale) + zero_point), saturating to Q's
// range. Divides rather than multiplying by 1/scale, as ONNX Runtime's MLAS
// QuantizeLinear does; rounds with std::nearbyint, so the caller's thread must
// be in the default FE_TONEAREST rounding mode (ties to even: 0.5 -> 0,
// 1.5 -> 2, -0.5 -> 0, -1.5 -> -2). +-inf saturate to the range limits.
// NaN (x NaN, or 0/0) gives zero_point, i.e. dequantizes to 0. ONNX leaves NaN
// unspecified for integer outputs and ONNX Runtime is inconsistent (its vector
// path clamps NaN to the range minimum, its scalar tail converts NaN to int,
// which is undefined); zero_point is defined and harmless.
// Instantiated for Q = uint8_t, int8_t, uint16_t, int16_t.
template <class Q>
void quantize_linear(const float* x, Q* y, int64_t outer, int64_t axis_len, int64_t inner, const float* scale,
                     const Q* zero_point, int64_t block_size, int64_t scale_count);

// x = (q - zero_point) * scale, computed as ONNX Runtime does:
// static_cast<float>(int(q) - int(zp)) * scale. The difference is taken in
// int64 so that the int32 case cannot overflow; for 8- and 16-bit types this is
// bit-identical to ONNX Runtime's int32 arithmetic.
// Instantiated for Q = uint8_t, int8_t, uint16_t, int16_t, int32_t.
template <class Q>
void dequantize_linear(const Q* x, float* y, int64_t outer, int64_t axis_len, int64_t inner, const float* scale,
                       const Q* zero_point, int64_t block_size, int64_t scale_count);

}  // namespace quant::kernels
