// Signal-processing reference kernels of ONNX opset 17: the discrete Fourier
// transform (DFT, STFT), the cosine-sum windows (Hann, Hamming, Blackman) and
// the mel filter bank (MelWeightMatrix). Float32 data, accumulated in double.
// Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace quant::kernels {

// cos and sin of 2*pi*j/n for j in [0, n): the twiddle factors of a DFT of
// length n, indexed by (k * t) mod n so that no angle loses precision.
struct DftTwiddles {
  explicit DftTwiddles(int64_t n);
  int64_t n;
  std::vector<double> cos, sin;
};

// One transform of the DFT rule (DFT opset 17):
//   y[k] = scale * sum_{t < n} x[t] * exp(sign * 2*pi*i * k*t / n),  k < n_out
// with sign -1 forward, +1 inverse, and scale 1 forward, 1/n inverse.
// x holds `x_len` samples, sample t at x + t * x_stride: one float (real) or
// a (re, im) pair (complex). Samples past x_len are zeros (dft_length longer
// than the signal); samples past n are ignored (shorter). y gets (re, im)
// pairs at y + k * y_stride. n_out <= n (onesided keeps n / 2 + 1).
void dft_f32(const float* x, int64_t x_stride, int64_t x_len, bool complex_input, const DftTwiddles& tw, bool inverse,
             float* y, int64_t y_stride, int64_t n_out);

// Generalized cosine window (HannWindow, HammingWindow, BlackmanWindow, opset 17):
//   w[t] = a0 - a1 cos(2 pi t / N) + a2 cos(4 pi t / N),  N = periodic ? size : size - 1.
// A symmetric window of size 1 is [a0 - a1 + a2] (N = 0 would divide by zero;
// numpy's reference gives NaN there, the limit of the formula is taken instead).
double cosine_sum_window_value(int64_t t, int64_t size, bool periodic, double a0, double a1, double a2);

// The bin index of each of the num_mel_bins + 2 triangle edges of
// MelWeightMatrix (opset 17): mel(f) = 2595 log10(1 + f / 700), the edges
// spaced evenly in mel from lower to upper with step (upper - lower) /
// (num_mel_bins + 2), mapped back to hertz and to bin floor((dft_length + 1) *
// hz / sample_rate) (the rule of the ONNX reference op_mel_weight_matrix.py
// and of ONNX Runtime).
std::vector<int64_t> mel_bin_edges(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
                                   double upper_hz);

// The [floor(dft_length / 2) + 1, num_mel_bins] weights (row-major, w zeroed
// by the caller) from the edges: triangle i rises from edges[i] to 1 at
// edges[i+1] and falls to edges[i+2]. Every edge must be < the row count (the
// caller checks). T: the output_datatype's element type.
template <class T>
void mel_weight_matrix(const std::vector<int64_t>& edges, int64_t num_mel_bins, T* w) {
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t left = edges[static_cast<size_t>(i)], center = edges[static_cast<size_t>(i) + 1],
                  right = edges[static_cast<size_t>(i) + 2];
    if (center == left) {
      w[center * num_mel_bins + i] = T(1);
    } else {
      for (int64_t j = left; j <= center; ++j)
        w[j * num_mel_bins + i] = static_cast<T>(static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j)
      w[j * num_mel_bins + i] = static_cast<T>(static_cast<double>(right - j) / static_cast<double>(right - center));
  }
}

}  // namespace quant::kernels
