#include "libquant/kernels/spectral.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace quant::kernels {

DftTwiddles::DftTwiddles(int64_t length)
    : n(length), cos(static_cast<size_t>(length)), sin(static_cast<size_t>(length)) {
  for (int64_t j = 0; j < n; ++j) {
    const double a = 2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(n);
    cos[static_cast<size_t>(j)] = std::cos(a);
    sin[static_cast<size_t>(j)] = std::sin(a);
  }
}

void dft_f32(const float* x, int64_t x_stride, int64_t x_len, bool complex_input, const DftTwiddles& tw, bool inverse,
             float* y, int64_t y_stride, int64_t n_out) {
  const int64_t n = tw.n;
  const int64_t len = std::min(x_len, n);
  const double sign = inverse ? 1.0 : -1.0;
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t k = 0; k < n_out; ++k) {
    double re = 0, im = 0;
    int64_t j = 0;  // (k * t) mod n, advanced by k each step
    for (int64_t t = 0; t < len; ++t) {
      const double c = tw.cos[static_cast<size_t>(j)], s = sign * tw.sin[static_cast<size_t>(j)];
      const double xr = x[t * x_stride], xi = complex_input ? x[t * x_stride + 1] : 0.0;
      // (xr + i xi)(c + i s)
      re += xr * c - xi * s;
      im += xr * s + xi * c;
      j += k;
      if (j >= n) j %= n;
    }
    y[k * y_stride] = static_cast<float>(re * scale);
    y[k * y_stride + 1] = static_cast<float>(im * scale);
  }
}

double cosine_sum_window_value(int64_t t, int64_t size, bool periodic, double a0, double a1, double a2) {
  const int64_t denominator = periodic ? size : size - 1;
  if (denominator <= 0) return a0 - a1 + a2;
  const double a = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(denominator);
  return a0 - a1 * std::cos(a) + a2 * std::cos(2.0 * a);
}

std::vector<int64_t> mel_bin_edges(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
                                   double upper_hz) {
  const auto hz_to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low = hz_to_mel(lower_hz), high = hz_to_mel(upper_hz);
  const size_t count = static_cast<size_t>(num_mel_bins) + 2;
  const double step = (high - low) / static_cast<double>(count);
  std::vector<int64_t> edges(count);
  for (size_t i = 0; i < count; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (low + step * static_cast<double>(i)) / 2595.0) - 1.0);
    edges[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  return edges;
}

}  // namespace quant::kernels
