// Integer dot products as ONNX Runtime computes them on x86 CPUs without VNNI
// (a target's "dot_product": "u8s8-pairs-saturate-int16", DESIGN "Targets").
//
// MLAS's uint8 x int8 kernels for AVX2 and AVX-512 without VNNI
// (QgemmU8S8KernelAvx2, ConvSymKernelAvx2, their Avx512Core twins) multiply
// with VPMADDUBSW: the raw uint8 activation bytes times the raw int8 weight
// bytes, each pair of neighbouring products (k = 2j, 2j + 1 in the order the
// kernel packs K) added into an int16 with signed saturation; VPMADDWD then
// widens the pair sums exactly into int32. Zero points are applied afterwards
// through row and column sums, so the saturation acts on raw values:
//
//   D[m][n] = sum_j sat16(a[m][2j] b[2j][n] + a[m][2j+1] b[2j+1][n])
//   C[m][n] = D - zb[n] sum_k a[m][k] - za sum_k b[k][n] + K za zb[n]   (mod 2^32)
//
// An odd K pairs its last value with a zero (MLAS pads K with zeros).
// Verified bit for bit against ONNX Runtime 1.20.1 on an AVX2-only CPU
// (tests/fixtures/ort-avx2, tests/kernels/test_qdot_sat16.cpp).
//
// The order of K is ONNX Runtime's: for MatMul the column index; for Conv its
// NHWC im2col (and ConvSym) order, kernel tap major and input channel minor,
// per group (onnxruntime/core/providers/cpu/quantization/qlinearconv.cc packs
// the weights as [group][taps][channels][M]). Depthwise convolutions use 16-bit
// multiplies there and never saturate: callers keep them exact.
//
// Activations given as int8 stand for ONNX Runtime's uint8 rewrite of int8
// Q/DQ pairs (QDQS8ToU8Transformer): the value x + 128 with zero point + 128,
// which leaves (x - zp) unchanged but moves the raw bytes the pairs multiply.
//
// These kernels predict another runtime's arithmetic; they favour plain code
// over speed (an AVX2 inner loop when the CPU has it) and allocate scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/qgemm.h"

namespace quant::kernels {

// How a target accumulates 8-bit dot products.
enum class DotArithmetic { Exact, U8S8PairsSaturateInt16 };

// Pairs computed and pairs whose exact sum left int16 (and was clipped).
struct SaturationStats {
  int64_t pairs = 0;
  int64_t saturated = 0;
  SaturationStats& operator+=(const SaturationStats& o) {
    pairs += o.pairs, saturated += o.saturated;
    return *this;
  }
};

// sum_j sat16(a[2j] b[2j] + a[2j+1] b[2j+1]) over k values (odd k: the last
// product alone); adds the pair counts to `stats`.
int32_t dot_u8s8_sat16(const uint8_t* a, const int8_t* b, int64_t k, SaturationStats& stats);

// The portable loop of dot_u8s8_sat16 (tests compare the AVX2 path with it).
int32_t dot_u8s8_sat16_portable(const uint8_t* a, const int8_t* b, int64_t k, SaturationStats& stats);

// int8 weights reordered once for the emulation: column n of B as K
// contiguous int8 values in ONNX Runtime's K order, with its zero point and sum.
struct Sat16Weights {
  int64_t n = 0, k = 0;
  std::vector<int8_t> cols;      // [n][k]
  std::vector<int32_t> col_sum;  // sum_k b[k][n]
  std::vector<int32_t> zero_point;  // per column (a per-tensor zero point repeated)

  // B of a MatMul / Gemm: element (k, n) of the layout given.
  static Sat16Weights from_matrix(const int8_t* b, int64_t ldb, BLayout layout, int64_t k, int64_t n,
                                  const int8_t* zero_points, int64_t zero_point_count);
  // Conv weights [M, C/group, taps] (w_zero_point: 0, 1 or M values) in
  // ONNX Runtime's order: per output channel, taps major, channels minor.
  static Sat16Weights from_conv(const int8_t* w, int64_t out_channels, int64_t group_in, int64_t taps,
                                const int8_t* zero_points, int64_t zero_point_count);
};

// C [m, count] (row stride ldc) = the emulated sum_k (a - za)(b - zb) of
// A [m, w.k] (row stride lda) with columns [first, first + count) of w.
// TA uint8, or int8 (the uint8 rewrite above).
template <class TA>
SaturationStats qgemm_sat16(int64_t m, const TA* a, int64_t lda, TA a_zero_point, const Sat16Weights& w,
                            int64_t first, int64_t count, int32_t* c, int64_t ldc);

// The int32 accumulators of a grouped (not depthwise) convolution, emulated:
// acc [N, out pixels, M] (channels minor, ready for requantize() with the
// pixel as row). Patches are gathered in ONNX Runtime's K order (taps major,
// channels minor; padding reads x_zero_point), one qgemm_sat16 per image,
// group and tile of pixels. `w` from Sat16Weights::from_conv.
template <class TX>
SaturationStats qconv_sat16_s32(const ConvGeometry& g, const TX* x, TX x_zero_point, const Sat16Weights& w,
                                int32_t* acc);

}  // namespace quant::kernels
