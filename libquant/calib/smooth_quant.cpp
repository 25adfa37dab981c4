#include "libquant/calib/smooth_quant.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace quant::calib {

std::vector<float> smoothing_factors(const std::vector<float>& act_absmax, const std::vector<float>& weight_absmax,
                                     double alpha) {
  assert(act_absmax.size() == weight_absmax.size());
  std::vector<float> s(act_absmax.size(), 1.0f);
  for (size_t j = 0; j < s.size(); ++j) {
    const double a = act_absmax[j], w = weight_absmax[j];
    if (!(a > 0) || !(w > 0)) continue;
    const double v = std::pow(a, alpha) / std::pow(w, 1.0 - alpha);
    s[j] = static_cast<float>(std::clamp(v, 1e-5, 1e5));
  }
  return s;
}

void fold_weight_channel_absmax(const WeightView& v, std::vector<float>& absmax) {
  const float* w = v.w->data<float>();
  const int64_t k = v.k(), n = v.n();
  absmax.resize(static_cast<size_t>(k), 0.0f);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t c = 0; c < n; ++c) {
      const float a = std::fabs(v.trans ? w[c * k + j] : w[j * n + c]);
      if (a > absmax[static_cast<size_t>(j)]) absmax[static_cast<size_t>(j)] = a;
    }
}

void scale_weight_channels(Tensor& t, bool trans, const std::vector<float>& s) {
  float* w = t.data<float>();
  const int64_t rows = t.dim(0), cols = t.dim(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= s[static_cast<size_t>(trans ? c : r)];
}

namespace {

// Per-tensor asymmetric uint8 (minmax over the values, 0 included), as
// calib/params does for the default activations; returns the dequantized values.
std::vector<float> fake_quant_activation(std::vector<float> x) {
  float lo = 0, hi = 0;
  for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi == lo) return x;
  const double scale = (static_cast<double>(hi) - lo) / 255.0;
  const double zero = std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0);
  for (float& v : x) {
    const double q = std::clamp(std::nearbyint(v / scale) + zero, 0.0, 255.0);
    v = static_cast<float>((q - zero) * scale);
  }
  return x;
}

// Symmetric int8 per output column of diag(s) W, dequantized, as [K, N].
std::vector<float> fake_quant_weight(const WeightView& v, const std::vector<float>& s) {
  const int64_t k = v.k(), n = v.n();
  const float* w = v.w->data<float>();
  std::vector<float> out(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < k; ++j)
    for (int64_t c = 0; c < n; ++c)
      out[static_cast<size_t>(j * n + c)] = (v.trans ? w[c * k + j] : w[j * n + c]) * s[static_cast<size_t>(j)];
  for (int64_t c = 0; c < n; ++c) {
    float m = 0;
    for (int64_t j = 0; j < k; ++j) m = std::max(m, std::fabs(out[static_cast<size_t>(j * n + c)]));
    if (m == 0) continue;
    const double scale = m / 127.0;
    for (int64_t j = 0; j < k; ++j) {
      float& x = out[static_cast<size_t>(j * n + c)];
      x = static_cast<float>(std::clamp(std::nearbyint(x / scale), -127.0, 127.0) * scale);
    }
  }
  return out;
}

}  // namespace

double smoothed_output_error(const float* x, int64_t rows, int64_t k, const std::vector<WeightView>& weights,
                             const std::vector<float>& s) {
  std::vector<float> xs(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) xs[static_cast<size_t>(r * k + j)] = x[r * k + j] / s[static_cast<size_t>(j)];
  const std::vector<float> xq = fake_quant_activation(std::move(xs));
  double error = 0;
  for (const WeightView& v : weights) {
    const int64_t n = v.n();
    const float* w = v.w->data<float>();
    const std::vector<float> wq = fake_quant_weight(v, s);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double exact = 0, quant = 0;
        for (int64_t j = 0; j < k; ++j) {
          exact += static_cast<double>(x[r * k + j]) * (v.trans ? w[c * k + j] : w[j * n + c]);
          quant += static_cast<double>(xq[static_cast<size_t>(r * k + j)]) * wq[static_cast<size_t>(j * n + c)];
        }
        error += (exact - quant) * (exact - quant);
      }
  }
  return error;
}

AlphaChoice search_alpha(const float* x, int64_t rows, int64_t k, const std::vector<WeightView>& weights,
                         const std::vector<float>& act_absmax) {
  std::vector<float> w_absmax(static_cast<size_t>(k), 0.0f);
  for (const WeightView& v : weights) fold_weight_channel_absmax(v, w_absmax);
  AlphaChoice best;
  best.error_without = smoothed_output_error(x, rows, k, weights, std::vector<float>(static_cast<size_t>(k), 1.0f));
  bool first = true;
  for (int step = 0; step <= 10; ++step) {
    const double alpha = step / 10.0;
    const double e = smoothed_output_error(x, rows, k, weights, smoothing_factors(act_absmax, w_absmax, alpha));
    if (first || e < best.error) best.alpha = alpha, best.error = e, first = false;
  }
  return best;
}

}  // namespace quant::calib
