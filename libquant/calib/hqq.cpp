#include "libquant/calib/hqq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace quant::calib {

double mean_abs_error(const float* w, int64_t n, float scale, SymmetricCodes codes) {
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i])) continue;
    sum += std::fabs(static_cast<double>(w[i]) - static_cast<double>(scale) * round_code(w[i], scale, codes));
    ++count;
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

float hqq_symmetric_scale(const float* w, int64_t n, SymmetricCodes codes, const HqqOptions& o) {
  float scale = symmetric_scale(w, n, codes);
  float best_scale = scale;
  double best_error = std::numeric_limits<double>::infinity();
  double beta = o.beta;
  for (int it = 0; it < o.iters; ++it) {
    const double error = mean_abs_error(w, n, scale, codes);
    if (!(error < best_error)) break;  // torchao's early stop
    best_error = error;
    best_scale = scale;
    // W_e = shrink_lp(W - W_r); then s = <W - W_e, W_q> / <W_q, W_q>.
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(w[i])) continue;
      const double q = round_code(w[i], scale, codes);
      const double x = static_cast<double>(w[i]) - static_cast<double>(scale) * q;
      const double ax = std::fabs(x);
      // torchao's _shrink_lp_op; |x|^(p-1) of 0 is infinite and shrinks 0 to 0.
      const double shrunk = ax > 0 ? std::max(ax - std::pow(ax, o.lp_norm - 1) / beta, 0.0) : 0.0;
      const double we = std::copysign(shrunk, x);
      num += (static_cast<double>(w[i]) - we) * q;
      den += q * q;
    }
    beta *= o.kappa;
    const float next = den > 0 ? static_cast<float>(num / den) : 0.0f;
    if (!(next > 0) || !std::isfinite(next)) break;
    scale = next;
  }
  return best_scale;
}

RoundedWeights hqq_round(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes,
                         const HqqOptions& o) {
  return round_groups(w, rows, cols, group, codes,
                      [&](const float* g, int64_t n) { return hqq_symmetric_scale(g, n, codes, o); });
}

}  // namespace quant::calib
