// 256-entry lookup tables for unary ops on 8-bit data (Glow's approach, and
// ONNX Runtime's QLinearLookupBase for QLinearSigmoid / QLinearLeakyRelu /
// QLinearConcat): an 8-bit input has only 256 values, so the float function
// is evaluated once per value at prepare time and the op becomes a gather.
//
// Building a table for y = f(x) with input (sx, zx) and output (sy, zy), as
// ONNX Runtime's QlinearBuildLookupTable does:
//   in[i]    = sx * float(int(T(i)) - int(zx))       for the byte pattern i
//   out      = f(in)                                   (float32)
//   table[i] = saturate(round_half_to_even(out / sy) + zy)   (QuantizeLinear)
// The table is indexed by the input's byte pattern (uint8_t(x)), so an int8
// value -1 reads entry 255. T is uint8 or int8.
#pragma once

#include <cstdint>

#include "libquant/kernels/cpu.h"

namespace quant::kernels {

// in[i] for the 256 byte patterns i (step 1 above).
template <class T>
void lookup_table_inputs(float x_scale, T x_zero_point, float* in /*[256]*/);

// table[i] from f's 256 outputs (step 3 above).
template <class T>
void lookup_table_from_outputs(const float* out /*[256]*/, float y_scale, T y_zero_point, T* table /*[256]*/);

// y[i] = table[uint8_t(x[i])], split over `threads` (the same bytes on any
// count), on AVX-512 VBMI, AVX2 or portable code (lookup_table_apply.cpp).
// y may be x; no other overlap.
template <class T>
void apply_lookup_table(const T* x, const T* table, T* y, int64_t n, int threads = 1);

// The functions ONNX Runtime tabulates:
// MLAS MlasComputeLogistic as its FMA3 kernel computes it (x86 with FMA):
// sigmoid_f32 (sigmoid_f32.h), on one thread.
void logistic_mlas(const float* x, float* y, int64_t n);
// LeakyRelu: x >= 0 ? x : alpha * x.
void leaky_relu_values(const float* x, float* y, int64_t n, float alpha);

namespace detail {
// One path of apply_lookup_table on one thread, for tests that compare them:
// Avx512 (VBMI), Avx2 or Portable; false (y untouched) where it cannot run
// here or under the cap.
bool lookup_table_path(IsaCap level, const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n);
}  // namespace detail

}  // namespace quant::kernels
