#include "libquant/calib/range.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace quant::calib {
namespace {

using profile::Histogram;

constexpr int kMaxKlBins = 8192;

Range clamp_to_data(const Histogram& h, double lo, double hi) {
  double a = std::clamp(lo, h.min(), h.max());
  double b = std::clamp(hi, h.min(), h.max());
  return {static_cast<float>(std::min(a, b)), static_cast<float>(std::max(a, b))};
}

// The value below which `rank` of the finite values lie, assuming values are
// uniform inside a bin.
double value_at_rank(const Histogram& h, double rank) {
  double cum = 0;
  for (int i = 0; i < h.bins(); ++i) {
    double n = static_cast<double>(h.counts()[static_cast<size_t>(i)]);
    if (n > 0 && cum + n >= rank) {
      double lo = h.bin_lower_edge(i), hi = h.bin_lower_edge(i + 1);
      return lo + std::clamp((rank - cum) / n, 0.0, 1.0) * (hi - lo);
    }
    cum += n;
  }
  return h.max();
}

// ONNX Runtime's smooth_distribution: zeros get eps, non-zeros give up the same
// total mass. False when that is impossible (the candidate's KL is then infinite).
bool smooth(std::vector<double>& v) {
  constexpr double kEps = 1e-4;
  size_t zeros = static_cast<size_t>(std::count(v.begin(), v.end(), 0.0));
  size_t nonzeros = v.size() - zeros;
  if (nonzeros == 0) return false;
  double eps1 = kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& x : v) {
    if (x == 0) {
      x = kEps;
    } else {
      if (x <= eps1) return false;
      x -= eps1;
    }
  }
  return true;
}

// KL(P||Q) for the window [start, end) of `grid`; `prefix[k]` = sum of grid[0, k).
double window_kl(const std::vector<double>& grid, const std::vector<double>& prefix, int start, int end, int quant_bins) {
  const int m = end - start;
  std::vector<double> p(grid.begin() + start, grid.begin() + end);
  p.front() += prefix[static_cast<size_t>(start)];
  p.back() += prefix.back() - prefix[static_cast<size_t>(end)];
  std::vector<double> q(static_cast<size_t>(m), 0.0);
  for (int g = 0; g < quant_bins; ++g) {
    // Bin j belongs to level floor(j * quant_bins / m) (TensorRT's uniform
    // levels over the window, as pytorch-quantization's digitize): level g
    // holds bins [ceil(g * m / quant_bins), ceil((g + 1) * m / quant_bins)).
    int g0 = static_cast<int>((int64_t{g} * m + quant_bins - 1) / quant_bins);
    int g1 = static_cast<int>((int64_t{g + 1} * m + quant_bins - 1) / quant_bins);
    // Q is built from the unclipped counts, so clipping mass shows up as a P/Q mismatch.
    double merged = prefix[static_cast<size_t>(start + g1)] - prefix[static_cast<size_t>(start + g0)];
    int nonzero = 0;
    for (int j = g0; j < g1; ++j) nonzero += p[static_cast<size_t>(j)] != 0;
    if (nonzero == 0) continue;
    for (int j = g0; j < g1; ++j)
      if (p[static_cast<size_t>(j)] != 0) q[static_cast<size_t>(j)] = merged / nonzero;
  }
  if (!smooth(p) || !smooth(q)) return std::numeric_limits<double>::infinity();
  double sp = 0, sq = 0;
  for (int j = 0; j < m; ++j) {
    sp += p[static_cast<size_t>(j)];
    sq += q[static_cast<size_t>(j)];
  }
  double kl = 0;
  for (int j = 0; j < m; ++j) {
    double pj = p[static_cast<size_t>(j)] / sp, qj = q[static_cast<size_t>(j)] / sq;
    kl += pj * std::log(pj / qj);
  }
  return kl;
}

// The grid bin starting at 0 holds the exact zeros (after Relu, padding,
// masking), often a large share of all values. Every schema represents 0
// exactly, so they cost nothing to quantize; left in, the spike dominates the
// merged group holding it and KL(P||Q) grows with the group's width, which
// pushes the threshold down. NVIDIA's pytorch-quantization entropy calibrator
// does the same (bins[0] = bins[1]).
void drop_zero_spike(std::vector<double>& grid, size_t zero_bin) {
  if (zero_bin + 1 < grid.size()) grid[zero_bin] = grid[zero_bin + 1];
}

std::vector<double> prefix_sums(const std::vector<double>& v) {
  std::vector<double> out(v.size() + 1, 0.0);
  for (size_t i = 0; i < v.size(); ++i) out[i + 1] = out[i] + v[i];
  return out;
}

// Windows start where they hold at least half of the values: KL(P||Q) compares
// the clipped distribution with its quantized form, so it does not see the
// loss of clipping itself; a window holding only the first occupied bin has
// P = Q (both a spike) and KL 0, which collapsed ranges of data far from 0
// (a GlobalAveragePool output in [0.07, 1.06] became [0.07, 0.07]).
// TensorRT's start at 128 of 2048 bins makes the same assumption for data
// that starts near 0; KL thresholds of real data lie far above the median.
//
// The smallest n in [first, last] with minimal kl(n); `last` when every kl is infinite.
template <class Kl>
int narrowest_best(int first, int last, Kl kl) {
  int best_n = last;
  double best = std::numeric_limits<double>::infinity();
  for (int n = first; n <= last; ++n) {
    const double d = kl(n);
    if (d < best) {
      best = d;
      best_n = n;
    }
  }
  return best_n;
}

}  // namespace

Range range_minmax(const Histogram& h) {
  if (h.empty()) return {0, 0};
  return {static_cast<float>(h.min()), static_cast<float>(h.max())};
}

Range range_percentile(const Histogram& h, double percentile) {
  if (h.empty()) return {0, 0};
  double p = std::clamp(percentile, 50.0, 100.0);
  double n = static_cast<double>(h.count());
  return clamp_to_data(h, value_at_rank(h, n * (100 - p) / 100), value_at_rank(h, n * p / 100));
}

Range range_kl(const Histogram& h, int quant_bins) {
  if (h.empty() || h.min() == h.max() || quant_bins < 1) return range_minmax(h);
  // The grid's bin width is the histogram's own: on a lattice histogram (what
  // qprofile writes) cells are multiples of the width from 0, so re-gridding
  // around 0 moves whole cells and invents nothing. A finer grid would split
  // sparse tail cells into runs of 1-0-1 counts that the KL search reads as
  // structure. The search is quadratic in the grid size: past kMaxKlBins per
  // side extra resolution buys nothing.
  const bool non_negative = h.min() >= 0, non_positive = h.max() <= 0;
  const double a = std::max(-h.min(), h.max());
  const double width = std::max(h.bin_width(), a / kMaxKlBins);
  const int side = std::max(1, static_cast<int>(std::ceil(a / width - 1e-9)));
  if (side < quant_bins) return range_minmax(h);
  const double extent = width * side;  // >= a
  if (non_negative || non_positive) {
    // One-sided: windows [0, T]; non-positive data is mirrored.
    std::vector<uint64_t> counts = non_negative ? rebin_counts(h, 0, extent, side) : rebin_counts(h, -extent, 0, side);
    std::vector<double> grid(counts.begin(), counts.end());
    if (!non_negative) std::reverse(grid.begin(), grid.end());
    drop_zero_spike(grid, 0);
    std::vector<double> prefix = prefix_sums(grid);
    int first = quant_bins;
    while (first < side && prefix[static_cast<size_t>(first)] < prefix.back() / 2) ++first;
    const int best_n = narrowest_best(first, side, [&](int n) { return window_kl(grid, prefix, 0, n, quant_bins); });
    double t = width * best_n;
    return non_negative ? clamp_to_data(h, h.min(), t) : clamp_to_data(h, -t, h.max());
  }
  // Both signs: a grid over [-A, A] with `side` bins on each side of 0 and
  // windows [-T, T] (as ONNX Runtime's entropy calibrator), `quant_bins` levels
  // on each side as TensorRT's int8 (which searches |x| with 128 levels).
  std::vector<uint64_t> counts = rebin_counts(h, -extent, extent, 2 * side);
  std::vector<double> grid(counts.begin(), counts.end());
  drop_zero_spike(grid, side);
  std::vector<double> prefix = prefix_sums(grid);
  int first = quant_bins;
  auto inside = [&](int n) { return prefix[static_cast<size_t>(side + n)] - prefix[static_cast<size_t>(side - n)]; };
  while (first < side && inside(first) < prefix.back() / 2) ++first;
  const int best_n = narrowest_best(first, side, [&](int n) { return window_kl(grid, prefix, side - n, side + n, 2 * quant_bins); });
  double t = width * best_n;
  return clamp_to_data(h, -t, t);
}

Range range_mse(const Histogram& h, int num_levels) {
  if (h.empty() || h.min() == h.max() || num_levels < 2) return range_minmax(h);
  const int bins = h.bins();
  const double lo = h.min(), hi = h.max();
  // Bin centers, kept inside the exact data range (edge bins reach past it).
  std::vector<double> center(static_cast<size_t>(bins)), n(static_cast<size_t>(bins));
  for (int i = 0; i < bins; ++i) {
    double c = (h.bin_lower_edge(i) + h.bin_lower_edge(i + 1)) / 2;
    center[static_cast<size_t>(i)] = std::clamp(c, lo, hi);
    n[static_cast<size_t>(i)] = static_cast<double>(h.counts()[static_cast<size_t>(i)]);
  }
  // Moments of the bins below k (prefix) and from k on (suffix), each summed
  // from its own end so a tail's sum is not a difference of large totals.
  std::vector<double> pn(bins + 1, 0), p1(bins + 1, 0), p2(bins + 1, 0), sn(bins + 1, 0), s1(bins + 1, 0), s2(bins + 1, 0);
  for (int i = 0; i < bins; ++i) {
    size_t k = static_cast<size_t>(i);
    pn[k + 1] = pn[k] + n[k];
    p1[k + 1] = p1[k] + n[k] * center[k];
    p2[k + 1] = p2[k] + n[k] * center[k] * center[k];
  }
  for (int i = bins - 1; i >= 0; --i) {
    size_t k = static_cast<size_t>(i);
    sn[k] = sn[k + 1] + n[k];
    s1[k] = s1[k + 1] + n[k] * center[k];
    s2[k] = s2[k + 1] + n[k] * center[k] * center[k];
  }
  const double total = pn.back();
  auto error = [&](double a, double b) {
    size_t ka = static_cast<size_t>(std::lower_bound(center.begin(), center.end(), a) - center.begin());
    size_t kb = static_cast<size_t>(std::upper_bound(center.begin(), center.end(), b) - center.begin());
    double below = a * a * pn[ka] - 2 * a * p1[ka] + p2[ka];
    double above = s2[kb] - 2 * b * s1[kb] + b * b * sn[kb];
    double inside = total - pn[ka] - sn[kb];
    double step = (std::max(b, 0.0) - std::min(a, 0.0)) / (num_levels - 1);
    return std::max(below, 0.0) + std::max(above, 0.0) + inside * step * step / 12;
  };
  // Candidates: interior bin edges on the clippable side of 0, plus the exact ends.
  std::vector<double> lower{lo}, upper{hi};
  for (int i = 1; i < bins; ++i) {
    double e = h.bin_lower_edge(i);
    if (e > lo && e < std::min(0.0, hi)) lower.push_back(e);
    if (e < hi && e > std::max(0.0, lo)) upper.push_back(e);
  }
  double a = lo, b = hi, best = error(a, b);
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    for (double cand : upper) {
      double e = error(a, cand);
      if (e < best) {
        best = e;
        b = cand;
        changed = true;
      }
    }
    for (double cand : lower) {
      double e = error(cand, b);
      if (e < best) {
        best = e;
        a = cand;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return clamp_to_data(h, a, b);
}

Expected<Range> range_by_name(const Histogram& h, std::string_view method) {
  if (method == "minmax") return range_minmax(h);
  if (method == "kl") return range_kl(h);
  if (method == "mse") return range_mse(h);
  if (method == "percentile") return range_percentile(h);
  constexpr std::string_view kPrefix = "percentile:";
  if (method.substr(0, kPrefix.size()) == kPrefix) {
    std::string_view arg = method.substr(kPrefix.size());
    double p = 0;
    auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), p);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size() || !(p > 50 && p <= 100)) {
      return Status::bad_input("calibration '" + std::string(method) +
                               "': the percentile must be a number P with 50 < P <= 100, e.g. percentile:99.99");
    }
    return range_percentile(h, p);
  }
  return Status::bad_input("unknown calibration method '" + std::string(method) +
                           "' (valid: minmax, percentile, percentile:P, kl, mse)");
}

}  // namespace quant::calib
