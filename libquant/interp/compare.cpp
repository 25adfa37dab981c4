#include "libquant/interp/compare.h"

#include <cmath>
#include <limits>

namespace quant::interp {

Status ErrorStats::add(const Tensor& reference, const Tensor& tested) {
  if (reference.dtype() != DType::Float32 || tested.dtype() != DType::Float32)
    return Status::bad_input("comparison needs float32 outputs");
  if (reference.shape() != tested.shape())
    return Status::bad_input("output shapes differ: reference " + dims_to_string(reference.shape()) + ", tested " +
                             dims_to_string(tested.shape()));
  const float* r = reference.data<float>();
  const float* t = tested.data<float>();
  for (int64_t i = 0; i < reference.size(); ++i) {
    const double a = r[i], b = t[i], e = b - a;
    signal_ += a * a;
    noise_ += e * e;
    dot_ += a * b;
    ref_norm2_ += a * a;
    test_norm2_ += b * b;
    max_abs_ = std::max(max_abs_, std::abs(e));
    sum_abs_ += std::abs(e);
  }
  count_ += reference.size();
  return Status::ok();
}

double ErrorStats::snr_db() const {
  if (noise_ == 0) return std::numeric_limits<double>::infinity();
  if (signal_ == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal_ / noise_);
}

double ErrorStats::cosine() const {
  if (ref_norm2_ == 0 && test_norm2_ == 0) return 1.0;
  if (ref_norm2_ == 0 || test_norm2_ == 0) return 0.0;
  return dot_ / std::sqrt(ref_norm2_ * test_norm2_);
}

std::vector<int64_t> argmax_rows(const Tensor& scores) {
  std::vector<int64_t> out;
  if (scores.dtype() != DType::Float32 || scores.rank() == 0 || scores.size() == 0) return out;
  const int64_t classes = scores.dim(scores.rank() - 1);
  if (classes == 0) return out;
  const float* p = scores.data<float>();
  for (int64_t row = 0; row < scores.size() / classes; ++row) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (p[row * classes + c] > p[row * classes + best]) best = c;
    out.push_back(best);
  }
  return out;
}

bool in_top_k(const float* row, int64_t classes, int64_t label, int k) {
  if (label < 0 || label >= classes) return false;
  int64_t better = 0;
  for (int64_t c = 0; c < classes; ++c)
    if (row[c] > row[label] || (row[c] == row[label] && c < label)) ++better;
  return better < k;
}

}  // namespace quant::interp
