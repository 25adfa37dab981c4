// What a clipping range costs, estimated from a stored histogram alone: the share
// of values it clips and the signal-to-quantization-noise ratio of uniform 8-bit
// quantization over it. Used by `qprofile show` to rank tensors, hardest first.
#pragma once

#include <string>
#include <vector>

#include "libquant/calib/range.h"
#include "libquant/profile/histogram.h"

namespace quant::calib {

struct RangeCost {
  Range range;
  double clipped_share = 0;  // fraction of the finite values outside [range.min, range.max]
  double sqnr_db = 0;        // +infinity when there is no noise (or no signal)
};

// Values are assumed uniform inside each bin, with the edge bins cut to the exact
// [min, max]. Quantization uses `levels` levels on a grid widened to include 0 (the
// asymmetric schema of DESIGN): step = (max(b, 0) - min(a, 0)) / (levels - 1). A
// value inside [a, b] costs step^2 / 12, a value outside its squared distance to the
// nearest clip point; signal power is the mean of x^2. Integrals per bin are exact.
RangeCost assess_range(const profile::Histogram& h, Range range, int levels = 256);

struct MethodCost {
  std::string method;  // "minmax", "percentile", "kl", "mse", or a user's "percentile:P"
  RangeCost cost;
};

// The four methods of DESIGN "Calibration" (minmax, percentile, kl, mse), in that order.
std::vector<MethodCost> assess_methods(const profile::Histogram& h, int levels = 256);

}  // namespace quant::calib
