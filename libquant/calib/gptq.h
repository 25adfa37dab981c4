// GPTQ weight rounding (qconvert --weight-rounding gptq): Frantar, Ashkboos,
// Hoefler, Alistarh, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers", ICLR 2023, Algorithm 1, with the reference
// implementation's details (github.com/IST-DASLab/gptq, gptq.py fasterquant):
// dead inputs (H_kk = 0) zeroed, damping lambda = damp * mean(diag H),
// optional act-order (columns by decreasing H_kk), the upper Cholesky factor U
// of H^-1, columns quantized one by one with the error (w - q) / U_kk spread
// over the columns not yet quantized (row k of U), lazily in blocks of 128.
//
// H = 2 X^T X / n over the layer's n input rows (the paper's H_F = 2 X_F X_F^T);
// gathered streaming (add_hessian_rows), K x K per layer. The inputs are the
// float model's (not those of the already quantized layers before it).
//
// Group scales follow the algorithm: a group's scale is taken, when its first
// column is reached, from the current (error-updated) weights of the group
// (the reference's find_params at the group start). With act-order the
// groups stay contiguous along K, as MatMulNBits stores them: a group starts
// at the first of its columns in the permuted order, and its scale is taken
// from all its columns as updated so far (the reference instead regroups
// permuted columns and needs g_idx, which MatMulNBits' CPU kernel only runs
// on its slow dequantizing path).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libquant/calib/weight_rounding.h"
#include "libquant/core/tensor.h"

namespace quant::calib {

// sum over input rows of x x^T (K x K, row major) and the row count.
struct Hessian {
  int64_t k = 0;
  int64_t rows = 0;
  std::vector<double> sum;
};

// Adds the rows of x ([..., K], float32) to h (h.k set on the first call).
// Rows holding a non-finite value are skipped. False when K does not match.
bool add_hessian_rows(const Tensor& x, Hessian& h);

struct GptqOptions {
  double damp = 0.01;      // lambda = damp * mean(diag H) (the reference's percdamp)
  bool act_order = false;  // quantize columns by decreasing H_kk
  int64_t block = 128;     // lazy batch updates (the paper's B)
};

struct GptqResult {
  RoundedWeights weights;
  double damp = 0;          // the damping used (raised x10 while H + lambda I was not positive definite)
  int64_t dead_inputs = 0;  // inputs never non-zero in the data (their weights quantize to 0)
  std::string fallback;     // non-empty: rounded to nearest instead, and why
};

// W [rows, cols] row major (cols = K, the Hessian's size); group as in
// weight_rounding.h (cols: one scale per row, computed from the original row).
GptqResult gptq_round(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes, const Hessian& h,
                      const GptqOptions& options);

// Lower Cholesky factor L of the symmetric K x K matrix a (L L^T = a), in
// place in the lower triangle (the upper is zeroed). False when a is not
// positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t k);

}  // namespace quant::calib
