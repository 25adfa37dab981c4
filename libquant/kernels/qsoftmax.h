// Softmax on 8-bit data as ONNX Runtime computes it: its com.microsoft
// QLinearSoftmax (opset 1; contrib_ops/cpu/quantization/qlinear_softmax.cc,
// ORT 1.20), which its QDQ optimizer also substitutes for
// DequantizeLinear -> Softmax -> QuantizeLinear. Not the QDQ float semantics:
//
//  table (per x_scale and reduction length D, QlinearBuildLookupTableUint32):
//    shift = max(0, log(float(FLT_MAX / D)) - 5) / x_scale            (double)
//    for i in 0..255: table[is_signed ? uint8(i - 128) : i]
//                       = float(exp((i - 255 + shift) * x_scale))        (double exp)
//  per row of D values (x's zero point cancels and is not read):
//    uint8: e(x) = table[255 - max + x]; int8: e(x) = table[uint8(127 - max + x)]
//    sum = e(x_0) + e(x_1) + ... in float32, in order
//    q = nearbyintf(e(x) * floor(1.0f / y_scale) / sum) + y_zero_point
//    uint8: q > 255 ? 255 : q;  int8: q > 255 ? int8(255) : int8(q) (wraps, as ORT's cast does)
//
// The reduction runs over `rows` rows of `reduce` values spaced `stride`
// apart (stride 1 for the last axis; ONNX Runtime transposes the axis last,
// which gives the same values). T is uint8 or int8.
#pragma once

#include <cstdint>

namespace quant::kernels {

void qlinear_softmax_table(float x_scale, int64_t reduce, bool is_signed, float* table /*[256]*/);

template <class T>
void qlinear_softmax(const T* x, T* y, int64_t outer, int64_t reduce, int64_t inner, const float* table, float y_scale,
                     int32_t y_zero_point);

}  // namespace quant::kernels
