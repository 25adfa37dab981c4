// Integer convolution and matrix product with 16-bit activations and 8-bit
// weights, accumulated in int64: how integer-only backends with 16-bit
// activations compute (TFLite's 16x8 kernels: tensorflow/lite/kernels/
// internal/reference/integer_ops/conv.h ConvPerChannel and
// fully_connected.h FullyConnected for int16 input, int8 filter, an int64
// accumulator and bias, then MultiplyByQuantizedMultiplier on the int64 sum).
//
//   acc[i, j] = sum_k (a[i, k] - a_zp) * (b[k, j] - b_zp[j])      (int64)
//
// A product (a - a_zp)(b - b_zp) has |.| <= 65535 * 255 < 2^24, so runs of
// kBlock = 64 of them are summed exactly in int32 (< 2^30, vectorizable)
// before the int64 sum. These are the reference kernels of qrun's 16-bit
// targets (passes/lower_qdq.h lowers 16-bit Conv / MatMul / Gemm to them only
// under fixed-point requantization); they are exact, not tuned.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/requant.h"

namespace quant::kernels {

// b element (k, j) at b[k * ldb + j] (KxN) or b[j * ldb + k] (NxK); its zero
// point b_zp[j] (b_zp_count == n) or b_zp[0] (b_zp_count == 1).
template <class TA, class TB>
struct WideGemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const TA* a = nullptr;  // row i at a + i * lda
  int64_t lda = 0;
  int32_t a_zero_point = 0;
  const TB* b = nullptr;
  int64_t ldb = 0;
  bool b_nxk = false;
  const TB* b_zero_point = nullptr;
  int64_t b_zero_point_count = 1;
};

// acc[i * n + j] = the int64 sum above. Instantiated for TA = int16, uint16
// and TB = int8, uint8.
template <class TA, class TB>
void qgemm_wide(const WideGemmArgs<TA, TB>& args, int64_t* acc);

// QLinearConv with 16-bit x and y: y = requantize_wide(acc + bias[m]) (bias
// may be null) for the geometry g, NCHW; w [M, C/G, k...] with w_zp per
// tensor (count 1) or per output channel (count M); padding contributes zero.
template <class TX, class TW, class TY>
void qconv_wide(const ConvGeometry& g, const TX* x, int32_t x_zero_point, const TW* w, const TW* w_zero_point,
                int64_t w_zero_point_count, const int32_t* bias, const Requantizer& r, TY* y);

}  // namespace quant::kernels
