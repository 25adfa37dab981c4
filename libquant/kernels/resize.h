// ONNX Resize (opsets 10, 11, 13) and Upsample (opsets 7-9): separable
// N-d interpolation. Each axis is resolved once into, per output index, a
// few input taps with weights (1 for nearest, 2 for linear, 4 for cubic);
// the output is then the weighted sum over the taps of every axis, which is
// N-linear / N-cubic interpolation and equals the ONNX reference's axis by
// axis 1-D interpolation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

enum class ResizeMode { Nearest, Linear, Cubic };

// coordinate_transformation_mode of Resize-11/13: how output index x maps to
// the input coordinate, with scale = the given scale or length_out /
// length_in when sizes are given, and length_resized = scale * length_in
// (fractional when a scale does not divide evenly, as in the spec and the
// ONNX reference implementation):
//   HalfPixel          (x + 0.5) / scale - 0.5
//   PytorchHalfPixel   length_resized > 1 ? (x + 0.5) / scale - 0.5 : 0
//   AlignCorners       length_resized == 1 ? 0 : x * (length_in - 1) / (length_resized - 1)
//   Asymmetric         x / scale                  (Resize-10 and Upsample)
//   TfHalfPixelForNn   (x + 0.5) / scale
//   TfCropAndResize    length_resized != 1 ? start * (length_in - 1) + x * (end - start) * (length_in - 1) / (length_resized - 1)
//                                          : 0.5 * (start + end) * (length_in - 1)
//                      with start/end from roi; a coordinate outside
//                      [0, length_in - 1] yields extrapolation_value.
enum class CoordinateMode { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn, TfCropAndResize };

// nearest_mode of Resize-11/13, plus Simple for Resize-10 and Upsample, which
// the spec leaves open: ONNX Runtime takes ceil(x) when the axis shrinks
// (scale < 1) and floor(x) otherwise.
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeParams {
  ResizeMode mode = ResizeMode::Nearest;
  CoordinateMode coordinates = CoordinateMode::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;  // cubic: drop taps outside the input and renormalise
};

// The taps of one axis: for output index o, count[o] (0 to 4) pairs
// (index[4*o + t], weight[4*o + t]) with indices in [0, length_in), and
// outside[o] set when the coordinate left the input under TfCropAndResize.
// Zero-weight taps are dropped.
struct AxisTaps {
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> count;
  std::vector<uint8_t> outside;
};

// Fills `taps` for one axis. length_in >= 1, length_out >= 0, scale > 0;
// roi_start/roi_end are read only under TfCropAndResize.
void resize_axis_taps(const ResizeParams& p, int64_t length_in, int64_t length_out, double scale, double roi_start,
                      double roi_end, AxisTaps& taps);

// y[o...] = sum over the taps of every axis of the product of the weights
// times x at the tap indices, or `extrapolation` when any axis marks o
// outside. taps has one entry per axis of x_shape; y's shape is
// [taps[d].count.size()...]. Allocates nothing.
void resize_f32(const float* x, std::span<const int64_t> x_shape, std::span<const AxisTaps> taps, float extrapolation,
                float* y);

}  // namespace quant::kernels
