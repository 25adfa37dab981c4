// Calibration (DESIGN "Calibration"): pure functions from a stored histogram to
// the clipping range that quantization parameters are then chosen for.
// Every method returns a range inside the histogram's exact [min, max], and
// {0, 0} for a histogram that saw no finite value.
#pragma once

#include <string_view>

#include "libquant/core/status.h"
#include "libquant/profile/histogram.h"

namespace quant::calib {

struct Range {
  float min;
  float max;
};

// The exact min and max seen.
Range range_minmax(const profile::Histogram& h);

// Clips both tails: the lower end at the (100 - p)% point of the count, the upper
// end at the p% point, interpolating linearly inside a bin. p is clamped to [50, 100];
// p = 100 gives minmax.
Range range_percentile(const profile::Histogram& h, double percentile = 99.999);

// Entropy calibration as TensorRT's int8 calibrator: the histogram is re-gridded
// around 0 at its own bin width (rebin_counts; at most 8192 bins a side) because
// its range generally does not start at 0 or sit symmetric around it:
//  - non-negative data: a grid over [0, max], windows [0, T], T >= quant_bins bins;
//    non-positive data: the mirror image;
//  - data with both signs: a grid over [-A, A], A = max(|min|, |max|), windows
//    [-T, T] symmetric around 0 (as ONNX Runtime's entropy calibrator) with
//    `quant_bins` levels on each side of 0, as TensorRT's search over |x|.
// The grid bin starting at 0 takes its upper neighbour's count first (NVIDIA's
// pytorch-quantization does the same): exact zeros, a spike after Relu, are
// represented exactly by every schema and must not pull the threshold down.
// For each window: P = the window's counts with the clipped outliers added to
// its edge bins; Q = the window's unclipped counts merged into `quant_bins`
// (per side) equal groups and spread back evenly over the bins where P is
// non-zero (zeros stay zero); both smoothed (eps 1e-4 counts) as ONNX Runtime
// and Glow do; the window with minimal KL(P||Q) wins (ties: the narrower). The
// result is the window clipped to [min, max]. Fewer than `quant_bins` grid
// bins on a side give minmax.
Range range_kl(const profile::Histogram& h, int quant_bins = 128);

// Minimises the expected squared error of uniform quantization with `num_levels`
// levels on a grid that includes 0, estimated from bin centers: a value outside
// [a, b] costs its squared distance to the clip point, a value inside costs the
// rounding noise step^2/12. The lower and upper ends (candidates: bin edges and the
// exact min/max) are searched by alternating exact 1-D minimisations.
Range range_mse(const profile::Histogram& h, int num_levels = 256);

// "minmax", "percentile" (99.999), "percentile:P" (50 < P <= 100), "kl", "mse";
// anything else is bad_input listing the valid names.
Expected<Range> range_by_name(const profile::Histogram& h, std::string_view method);

}  // namespace quant::calib
