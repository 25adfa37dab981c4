#include "libquant/calib/assess.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quant::calib {
namespace {

// Mean of (x - t)^2 for x uniform on [u, v].
double mean_square_from(double u, double v, double t) {
  if (v <= u) return (u - t) * (u - t);
  double a = u - t, b = v - t;
  return (b * b * b - a * a * a) / (3 * (b - a));
}

}  // namespace

RangeCost assess_range(const profile::Histogram& h, Range range, int levels) {
  RangeCost out;
  out.range = range;
  if (h.empty()) {
    out.sqnr_db = std::numeric_limits<double>::infinity();
    return out;
  }
  const double a = range.min, b = range.max;
  const double step = (std::max(b, 0.0) - std::min(a, 0.0)) / (levels - 1);
  const double rounding_noise = step * step / 12;
  double signal = 0, noise = 0, clipped = 0;
  for (int i = 0; i < h.bins(); ++i) {
    const double c = static_cast<double>(h.counts()[static_cast<size_t>(i)]);
    if (c == 0) continue;
    // The bin's values lie in [u, v]: its edges cut to the exact data range.
    const double u = std::clamp(h.bin_lower_edge(i), h.min(), h.max());
    const double v = std::clamp(h.bin_lower_edge(i + 1), h.min(), h.max());
    signal += c * mean_square_from(u, v, 0);
    // Split [u, v] into below a, inside, above b; each part gets its share of c.
    const double width = v - u;
    const double below = width > 0 ? std::max(std::min(v, a) - u, 0.0) / width : (u < a ? 1.0 : 0.0);
    const double above = width > 0 ? std::max(v - std::max(u, b), 0.0) / width : (u > b ? 1.0 : 0.0);
    const double inside = std::max(1.0 - below - above, 0.0);
    if (below > 0) noise += c * below * mean_square_from(u, std::min(v, a), a);
    if (above > 0) noise += c * above * mean_square_from(std::max(u, b), v, b);
    noise += c * inside * rounding_noise;
    clipped += c * (below + above);
  }
  const double n = static_cast<double>(h.count());
  out.clipped_share = clipped / n;
  out.sqnr_db = noise > 0 && signal > 0 ? 10 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
  return out;
}

std::vector<MethodCost> assess_methods(const profile::Histogram& h, int levels) {
  std::vector<MethodCost> out;
  for (const char* m : {"minmax", "percentile", "kl", "mse"}) {
    Range r = *range_by_name(h, m);
    out.push_back({m, assess_range(h, r, levels)});
  }
  return out;
}

}  // namespace quant::calib
