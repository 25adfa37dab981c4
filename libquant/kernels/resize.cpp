#include "libquant/kernels/resize.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace quant::kernels {
namespace {

// length_resized is scale * length_in, not the integer output length: the
// spec defines scale = length_resized / length_original, and the ONNX
// reference implementation computes align_corners and tf_crop_and_resize with
// that (possibly fractional) length, so a downsampling by 0.6 of 4 values
// (2 outputs) maps output 1 to 1 * 3 / (2.4 - 1). ONNX Runtime uses the
// integer length there instead.
double input_coordinate(CoordinateMode m, int64_t x, int64_t length_in, double scale, double roi_start, double roi_end) {
  const double xr = static_cast<double>(x), in = static_cast<double>(length_in), resized = scale * in;
  switch (m) {
    case CoordinateMode::HalfPixel: return (xr + 0.5) / scale - 0.5;
    case CoordinateMode::PytorchHalfPixel: return resized > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
    case CoordinateMode::AlignCorners: return resized == 1 ? 0.0 : xr * (in - 1) / (resized - 1);
    case CoordinateMode::Asymmetric: return xr / scale;
    case CoordinateMode::TfHalfPixelForNn: return (xr + 0.5) / scale;
    case CoordinateMode::TfCropAndResize:
      return resized != 1 ? roi_start * (in - 1) + xr * (roi_end - roi_start) * (in - 1) / (resized - 1)
                          : 0.5 * (roi_start + roi_end) * (in - 1);
  }
  return 0.0;
}

int64_t nearest_index(NearestMode m, double x, double scale) {
  const double f = std::floor(x), ratio = x - f;
  switch (m) {
    case NearestMode::RoundPreferFloor: return static_cast<int64_t>(ratio <= 0.5 ? f : f + 1);
    case NearestMode::RoundPreferCeil: return static_cast<int64_t>(ratio < 0.5 ? f : f + 1);
    case NearestMode::Floor: return static_cast<int64_t>(f);
    case NearestMode::Ceil: return static_cast<int64_t>(std::ceil(x));
    case NearestMode::Simple: return static_cast<int64_t>(scale < 1.0 ? std::ceil(x) : f);
  }
  return static_cast<int64_t>(f);
}

// Keys' cubic convolution weights of the taps floor(x) - 1 .. floor(x) + 2
// for t = x - floor(x) (Resize-11 cubic_coeff_a, the ONNX reference's cubic_coeffs).
void cubic_weights(double t, double a, double w[4]) {
  const double s = t + 1, u = 1 - t, v = 2 - t;
  w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
  w[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

}  // namespace

void resize_axis_taps(const ResizeParams& p, int64_t length_in, int64_t length_out, double scale, double roi_start,
                      double roi_end, AxisTaps& taps) {
  assert(length_in >= 1 && length_out >= 0 && (scale > 0 || length_out == 0));
  const size_t n = static_cast<size_t>(length_out);
  taps.index.assign(4 * n, 0);
  taps.weight.assign(4 * n, 0.0f);
  taps.count.assign(n, 0);
  taps.outside.assign(n, 0);
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, length_in - 1); };
  for (size_t o = 0; o < n; ++o) {
    double x = input_coordinate(p.coordinates, static_cast<int64_t>(o), length_in, scale, roi_start, roi_end);
    if (p.coordinates == CoordinateMode::TfCropAndResize && !(x >= 0 && x <= static_cast<double>(length_in - 1))) {
      taps.outside[o] = 1;
      continue;
    }
    // Beyond [-3, length_in + 2] every tap reads the edge (or is excluded)
    // either way; clamping keeps the integer conversions below defined.
    x = std::isnan(x) ? 0.0 : std::clamp(x, -3.0, static_cast<double>(length_in + 2));
    int64_t idx[4];
    double w[4];
    int k = 0;
    const int64_t f = static_cast<int64_t>(std::floor(x));
    const double t = x - std::floor(x);
    switch (p.mode) {
      case ResizeMode::Nearest:
        idx[0] = nearest_index(p.nearest, x, scale);
        w[0] = 1.0;
        k = 1;
        break;
      case ResizeMode::Linear:
        idx[0] = f;
        idx[1] = f + 1;
        w[0] = 1 - t;
        w[1] = t;
        k = 2;
        break;
      case ResizeMode::Cubic: {
        cubic_weights(t, p.cubic_coeff_a, w);
        for (int j = 0; j < 4; ++j) idx[j] = f - 1 + j;
        k = 4;
        if (p.exclude_outside) {
          double sum = 0;
          for (int j = 0; j < 4; ++j) {
            if (idx[j] < 0 || idx[j] >= length_in) w[j] = 0;
            sum += w[j];
          }
          for (int j = 0; j < 4; ++j) w[j] = sum != 0 ? w[j] / sum : 0;
        }
        break;
      }
    }
    // Out-of-range taps read the edge (the reference pads with edge values).
    uint8_t kept = 0;
    for (int j = 0; j < k; ++j) {
      if (w[j] == 0.0) continue;
      taps.index[4 * o + kept] = clamp(idx[j]);
      taps.weight[4 * o + kept] = static_cast<float>(w[j]);
      ++kept;
    }
    taps.count[o] = kept;
  }
}

namespace {

struct ResizeRun {
  const float* x;
  std::span<const AxisTaps> taps;
  Dims x_strides;
  Dims coord;  // current output coordinate
  float extrapolation;
};

double sample(const ResizeRun& r, size_t d, int64_t offset) {
  if (d == r.taps.size()) return r.x[offset];
  const AxisTaps& a = r.taps[d];
  const size_t o = static_cast<size_t>(r.coord[d]);
  double sum = 0;
  for (size_t t = 0; t < a.count[o]; ++t)
    sum += static_cast<double>(a.weight[4 * o + t]) * sample(r, d + 1, offset + a.index[4 * o + t] * r.x_strides[d]);
  return sum;
}

void resize_rec(ResizeRun& r, size_t d, bool outside, float*& y) {
  const AxisTaps& a = r.taps[d];
  for (size_t o = 0; o < a.count.size(); ++o) {
    r.coord[d] = static_cast<int64_t>(o);
    const bool out = outside || a.outside[o];
    if (d + 1 < r.taps.size()) {
      resize_rec(r, d + 1, out, y);
    } else {
      *y++ = out ? r.extrapolation : static_cast<float>(sample(r, 0, 0));
    }
  }
}

}  // namespace

void resize_f32(const float* x, std::span<const int64_t> x_shape, std::span<const AxisTaps> taps, float extrapolation,
                float* y) {
  assert(taps.size() == x_shape.size());
  if (taps.empty()) {
    *y = *x;
    return;
  }
  ResizeRun r{x, taps, contiguous_strides(x_shape), Dims(taps.size(), 0), extrapolation};
  resize_rec(r, 0, false, y);
}

}  // namespace quant::kernels
