// Element-wise QLinearAdd / QLinearMul (ONNX Runtime com.microsoft, opset 1)
// on 8-bit data, with the float arithmetic of ONNX Runtime's x86 MLAS kernels
// (MlasQLinearAdd: qladd_avx2.cpp; MlasQLinearMul: qlmul.cpp, SSE2), so that
// results match ONNX Runtime bit for bit:
//
//  QLinearAdd: ra = sa / sc, rb = sb / sc (float32),
//    base = float(zc) - (ra * float(za) + rb * float(zb)),
//    both vectors:   c = round(fma(a, ra, fma(b, rb, base)))
//    b is a scalar:  base' = base + b * rb (rounded once more), c = round(fma(a, ra, base'))
//  QLinearMul: r = sa * sb / sc (float32, left to right),
//    c = round(float((a - za) * (b - zb)) * r + float(zc))
//  round = round half to even (cvtps2dq), then saturate to T's range.
//
// With b a scalar the kernels compute a (op) b[0] for every element, in the
// order ONNX Runtime uses when one operand of a broadcast is a single value;
// ONNX Runtime passes the span as "a" and the scalar as "b" even when the
// scalar is the node's first input, which `qlinear_binary` callers mirror by
// swapping operands and parameters. T is uint8 or int8.
#pragma once

#include <cstdint>

namespace quant::kernels {

struct QLinearBinaryParams {
  float a_scale = 1, b_scale = 1, c_scale = 1;
  int32_t a_zero_point = 0, b_zero_point = 0, c_zero_point = 0;
};

template <class T>
void qlinear_add(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);

template <class T>
void qlinear_mul(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);

}  // namespace quant::kernels
