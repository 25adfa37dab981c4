// HQQ weight rounding (qconvert --weight-rounding hqq): Badri & Shaji,
// "Half-Quadratic Quantization of Large Machine Learning Models" (Mobius Labs,
// 2023). Data-free: per group, the quantization parameters minimise the
// lp-norm (p < 1) of the weight error, ||W - dequant(quant(W))||_p^p, by
// half-quadratic splitting: an auxiliary error W_e takes the lp term through
// its proximal operator (the generalized soft-thresholding
//   shrink(x) = sign(x) max(|x| - |x|^(p-1) / beta, 0)),
// the parameter then solves the remaining quadratic in closed form, and beta
// grows by kappa each iteration. Constants and stopping rule as torchao's
// optimize_weights_proximal_legacy (torchao/quantization/quant_primitives.py,
// from the hqq library's hqq/core/optimize.py): lp_norm 0.7, beta 10, kappa
// 1.01, 20 iterations, stop at the first iteration whose mean |W - W_r| does
// not improve.
//
// The reference optimises the zero point of an asymmetric grid with the scale
// fixed. qtool's int4 forms are symmetric (torchao's Int8DynActInt4Weight,
// MatMulNBits with its implicit zero point 8), so here the zero point stays 0
// and the scale is the parameter: the quadratic step is
//   s = <W - W_e, W_q> / <W_q, W_q>
// (least squares of W - W_e ~ s W_q, the counterpart of the reference's
// zero = mean(W_q - (W - W_e) / s)). The result is the iterate with the
// lowest mean |W - W_r|, round-to-nearest's absmax scale included, so it
// never does worse than round to nearest by that measure.
#pragma once

#include <cstdint>

#include "libquant/calib/weight_rounding.h"

namespace quant::calib {

struct HqqOptions {
  double lp_norm = 0.7;
  double beta = 10.0;
  double kappa = 1.01;
  int iters = 20;
};

// The optimised scale of one group of n weights (starting from absmax / divisor).
float hqq_symmetric_scale(const float* w, int64_t n, SymmetricCodes codes, const HqqOptions& options = {});

// Every group of W [rows, cols] (layout of weight_rounding.h) with its HQQ scale.
RoundedWeights hqq_round(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes,
                         const HqqOptions& options = {});

// mean |w - s q(w, s)| over a group: the reference's stopping criterion.
double mean_abs_error(const float* w, int64_t n, float scale, SymmetricCodes codes);

}  // namespace quant::calib
