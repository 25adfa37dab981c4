// Empirical bias correction (qconvert --bias-correction): Nagel, van Baalen,
// Blankevoort, Welling, "Data-Free Quantization Through Weight Equalization and
// Bias Correction", ICCV 2019, section 4.2 (AIMET: aimet_torch.bias_correction).
//
// Quantizing W to W_q shifts a layer's output by (W_q - W) x; its expectation
// per output channel, E[(W_q - W) x] = (W_q - W) E[x], is a systematic error
// the bias can take back: b' = b - (W_q - W) E[x] (the paper's equation 13).
// E[x] is measured on calibration data with the layer's float inputs. For a
// convolution E[x] is the mean of what each weight reads: per input channel
// and kernel tap, over every output position (padding reads 0), so borders
// are exact; for Gemm the mean of each column of A.
//
// Pure functions on tensors (DESIGN "calib/"): the graph side is
// passes/bias_correction.h.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/core/tensor.h"

namespace quant::calib {

// The sums of a layer's inputs as its weights read them.
struct InputMeans {
  Dims shape;               // Conv: [C_in, k_1, ..., k_n]; Gemm: [K]
  std::vector<double> sum;  // one per element of `shape`
  int64_t count = 0;        // output positions (Gemm: rows) summed over

  double mean(int64_t i) const { return count ? sum[static_cast<size_t>(i)] / static_cast<double>(count) : 0.0; }
};

// ONNX Conv's geometry over the spatial dims (NOTSET/VALID padding: explicit pads).
struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // begin of each spatial dim, then end of each
};

// Adds, for every output position of a convolution of x [N, C, spatial...]
// (1 to 3 spatial dims), the value each (channel, tap) reads to m (0 in the
// padding). m.shape is set on the first call. False when x does not fit.
bool add_conv_input_sums(const Tensor& x, const ConvGeometry& geo, InputMeans& m);

// Adds the rows of Gemm's A ([M, K], or [K, M] with trans_a) to m; MatMul's
// A may have leading dims ([..., M, K]: every row counts).
bool add_gemm_input_sums(const Tensor& a, bool trans_a, InputMeans& m);

// The expected output shift per output channel, (W_q - W) E[x]:
//  - Conv: W [C_out, C_in / group, k...], reading channels of group o / (C_out / group);
//  - Gemm (gemm = true): W [K, N], or [N, K] with trans_b.
// Sizes must agree with m (the caller checks shapes; assert otherwise).
std::vector<double> expected_output_shift(const Tensor& w, const Tensor& w_quantized, const InputMeans& m, bool gemm,
                                          bool trans_b, int64_t group);

}  // namespace quant::calib
