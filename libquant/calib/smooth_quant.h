// SmoothQuant (qconvert --smooth-quant): Xiao, Lin, Seznec, Wu, Demouth, Han,
// "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large
// Language Models", ICML 2023, section 4. ONNX Runtime applies it through
// Intel Neural Compressor's smoother; INC adds the per-layer alpha search.
//
// A MatMul/Gemm computes Y = X W with X [.., K] and W [K, N]. For any positive
// s (one factor per input channel j), Y = (X diag(1/s)) (diag(s) W): the
// activation's channel j is divided by s_j and W's row j multiplied by it.
// With a_j = max |X_j| (the profile's channel absmax) and w_j = max_n |W[j, n]|,
//   s_j = a_j^alpha / w_j^(1 - alpha)        (the paper's equation 4)
// moves the difficulty of an outlier channel from the activation (quantized
// per tensor) into the weight (quantized per output column). alpha = 0.5 is the
// paper's default; alpha = 1 makes every channel of X / s equal in range.
//
// Pure functions on tensors (DESIGN "calib/"); the graph rewrite is
// passes/smooth_quant.h.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/core/tensor.h"

namespace quant::calib {

// s_j as above, computed in double and rounded to float once. A channel with
// a_j = 0 or w_j = 0 (nothing to balance) gets 1; s is clamped to
// [1e-5, 1e5], INC's lower clip (neural_compressor's smoother clips the scale
// at 1e-5), made symmetric so that neither side can underflow.
// alpha in [0, 1]; sizes equal.
std::vector<float> smoothing_factors(const std::vector<float>& act_absmax, const std::vector<float>& weight_absmax,
                                     double alpha);

// A float32 2-D weight as a MatMul/Gemm reads it: [K, N], or [N, K] when
// `trans` (Gemm transB = 1).
struct WeightView {
  const Tensor* w = nullptr;
  bool trans = false;
  int64_t k() const { return trans ? w->dim(1) : w->dim(0); }
  int64_t n() const { return trans ? w->dim(0) : w->dim(1); }
};

// max over n of |W[j, n]|, folded into `absmax` (size K) by max: the
// consumers of one activation share s, so their rows are measured together.
void fold_weight_channel_absmax(const WeightView& w, std::vector<float>& absmax);

// W[j, :] *= s_j in place (the float product rounded to float32).
void scale_weight_channels(Tensor& w, bool trans, const std::vector<float>& s);

// The layer's output error after fake quantization with factors s: the sum
// over the weights of || X W - Q_a(X / s) Q_w(diag(s) W) ||^2 on the rows of
// x ([rows, K]). Q_a: per-tensor asymmetric uint8 over [min(0, min), max(0, max)]
// of X / s on these rows (qtool's default activations, minmax); Q_w:
// symmetric int8 per output column (the default weights, DESIGN "Numerics").
double smoothed_output_error(const float* x, int64_t rows, int64_t k, const std::vector<WeightView>& weights,
                             const std::vector<float>& s);

// alpha = 0, 0.1, ..., 1 (INC's auto alpha grid), the one with the smallest
// smoothed_output_error; the first of equal ones.
struct AlphaChoice {
  double alpha = 0.5;
  double error = 0;           // at alpha
  double error_without = 0;   // with s = 1 (no smoothing)
};
AlphaChoice search_alpha(const float* x, int64_t rows, int64_t k, const std::vector<WeightView>& weights,
                         const std::vector<float>& act_absmax);

}  // namespace quant::calib
