// Error metrics between a tested tensor and its reference (quantized vs float):
// what `qrun --reference` prints and gates on.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace quant::interp {

// Accumulates over any number of tensor pairs (samples, outputs).
class ErrorStats {
 public:
  // Both tensors must be float32 of the same shape.
  Status add(const Tensor& reference, const Tensor& tested);

  int64_t count() const { return count_; }
  // 10 log10(sum ref^2 / sum (tested-ref)^2); +inf when identical.
  double snr_db() const;
  // Cosine similarity of the flattened tensors; 1 when both are zero.
  double cosine() const;
  double max_abs_error() const { return max_abs_; }
  double mean_abs_error() const { return count_ ? sum_abs_ / static_cast<double>(count_) : 0; }

 private:
  double signal_ = 0, noise_ = 0, dot_ = 0, ref_norm2_ = 0, test_norm2_ = 0, max_abs_ = 0, sum_abs_ = 0;
  int64_t count_ = 0;
};

// Index of the largest value of each row along the last axis (first on ties):
// the top-1 class per row of a [..., classes] tensor.
std::vector<int64_t> argmax_rows(const Tensor& scores);
// Whether `label` is among the k largest values of `row`.
bool in_top_k(const float* row, int64_t classes, int64_t label, int k);

}  // namespace quant::interp
