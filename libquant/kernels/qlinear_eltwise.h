// Element-wise QLinearAdd / QLinearMul (ONNX Runtime com.microsoft, opset 1)
// on 8-bit data, with the float arithmetic of ONNX Runtime 1.20's x86-64 MLAS
// kernels, so that results match ONNX Runtime bit for bit on x86-64.
//
// Which kernels those are: MlasQLinearAdd dispatches through the platform
// table (mlas/lib/platform.cpp) to MlasQLinearAdd{U8,S8}KernelAvx2
// (mlas/lib/intrinsics/avx2/qladd_avx2.cpp) on any CPU with AVX2 + FMA; the
// AVX-512 branch of the table does not replace it, so this machine (AVX2 and
// AVX-512) runs the AVX2 kernel. It is float arithmetic: the integer
// fixed-point path of qladd.cpp (MlasCalcQLinearAddParameters, multipliers
// with a rounding right shift for scale ratios in [2^-14, 2^8)) is compiled
// only under MLAS_NEON_INTRINSICS, i.e. for ARM, and is not used on x86.
// MlasQLinearMul (mlas/lib/qlmul.cpp) has no platform entry: its SSE2 branch
// runs on every x86-64 CPU, also float.
//
//  QLinearAdd: ra = sa / sc, rb = sb / sc (float32),
//    base = float(zc) - fma(ra, float(za), rb * float(zb))
//    both vectors:   c = cvt(fma(a, ra, fma(b, rb, base)))
//    b is a scalar:  base' = fma(b, rb, base),  c = cvt(fma(a, ra, base'))
//  The source writes base as zc - (ra * za + rb * zb) and base' as
//  base + b * rb; ONNX Runtime's release build (GCC, -mfma for the AVX2
//  files, default -ffp-contract=fast) fuses both into the fma shown, which is
//  what onnxruntime-node 1.20.1 computes (measured over 2.6e7 elements on
//  operands and parameters chosen where the orders differ; the unfused forms
//  disagree on ~0.3% of them).
//  QLinearMul: r = sa * sb / sc (float32, left to right),
//    c = cvt(float((a - za) * (b - zb)) * r + float(zc))   (SSE2: no fma)
//  cvt = cvtps2dq (round half to even; outside int32 or NaN it yields
//  0x80000000), then packssdw + packuswb/packsswb saturation to T. So a
//  result beyond int32 becomes T's minimum, not its maximum, exactly as ONNX
//  Runtime gives.
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

// Eight elements at a time with AVX2 + FMA when the CPU has them (the same
// instructions as MLAS, so the same bits), else detail::qlinear_add_portable.
template <class T>
void qlinear_add(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);

namespace detail {
// The scalar definitions of qlinear_add and qlinear_mul, which the tests compare the SIMD paths against.
template <class T>
void qlinear_add_portable(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);
template <class T>
void qlinear_mul_portable(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);
}  // namespace detail

template <class T>
void qlinear_mul(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p);

// cvtps2dq followed by the 8-bit packing saturation, as above; shared with
// the tests' naive transcriptions of the MLAS arithmetic.
template <class T>
T mlas_round_saturate(float v);

}  // namespace quant::kernels
