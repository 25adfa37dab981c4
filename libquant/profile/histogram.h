// A streaming, constant-memory histogram of one activation (in the spirit of
// Glow's profiling: exact min/max plus a histogram), filled sample by sample.
//
// What is tracked: exact min, max, count, sum (double) of the finite values;
// NaN and +-Inf are only counted (nan_count, inf_count), never folded into
// min/max, the sum or the bins. count() is the number of finite values and
// always equals the sum of counts().
//
// Range and re-binning rule (deterministic, and exact: no count is ever split):
//  - The first add() with finite values sets [lo, hi] to that batch's [min, max].
//    A zero-width batch (all values v) gets [v - d, v + d], d = max(|v|, 1) * 2^-20.
//  - When a later batch holds values above hi, the range doubles, anchored at lo
//    (hi' = hi + (hi - lo)), as many times as needed; each doubling merges the bin
//    pairs (0,1), (2,3), ... into bins 0, 1, ... and leaves the upper half empty.
//    Values below lo do the same anchored at hi (lo' = lo - (hi - lo)), merging
//    pairs counted from the top bin. Upward growth is applied before downward.
//  - Bin i covers [lo + i*w, lo + (i+1)*w), w = (hi - lo) / bins; hi itself falls
//    in the last bin.
// So the histogram depends only on the sequence of add() calls, and its range
// is at most about twice the data's range on each growth side.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "libquant/core/status.h"

namespace quant::profile {

// Everything a Histogram stores, for (de)serialization.
struct HistogramFields {
  double lo = 0;
  double hi = 0;
  std::vector<uint64_t> counts;  // one per bin
  double min = std::numeric_limits<double>::quiet_NaN();  // NaN when no finite value was seen
  double max = std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  uint64_t nan_count = 0;
  uint64_t inf_count = 0;
};

class Histogram {
 public:
  static constexpr int kMaxBins = 1 << 24;

  // bins in [1, kMaxBins]; callers validate user-given values first.
  explicit Histogram(int bins = 2048);
  // Checks the fields are consistent (lo < hi when non-empty, lo <= min <= max <= hi,
  // finite values); the error names the offending field.
  static Expected<Histogram> from_fields(HistogramFields fields);
  HistogramFields fields() const;

  void add(const float* x, int64_t n);

  // Combines shards. The result's range is the union of the inputs' ranges and
  // its bin count the larger of the two; every source bin's count is spread over
  // the result bins it overlaps in proportion to the overlap (assuming values are
  // uniform inside a bin), accumulated in double, then rounded by cumulative
  // rounding (bin t gets round(C_t) - round(C_{t-1}) of the running sum C), so
  // the total count is preserved exactly and each bin is within about 1 of its
  // proportional share. Identical grids add exactly. min/max/sum/NaN/Inf combine exactly.
  static Histogram merge(const Histogram& a, const Histogram& b);

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  int bins() const { return static_cast<int>(counts_.size()); }
  const std::vector<uint64_t>& counts() const { return counts_; }
  double bin_width() const { return (hi_ - lo_) / bins(); }
  double bin_lower_edge(int i) const;  // edge i in [0, bins]; edge bins == hi

  bool empty() const { return count_ == 0; }  // no finite value seen
  double min() const { return min_; }         // NaN when empty()
  double max() const { return max_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double mean() const;  // NaN when empty()
  uint64_t nan_count() const { return nan_count_; }
  uint64_t inf_count() const { return inf_count_; }

 private:
  void grow_to(double batch_min, double batch_max);

  double lo_ = 0;
  double hi_ = 0;
  std::vector<uint64_t> counts_;
  double min_ = std::numeric_limits<double>::quiet_NaN();
  double max_ = std::numeric_limits<double>::quiet_NaN();
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t nan_count_ = 0;
  uint64_t inf_count_ = 0;
};

// `h`'s counts on a grid of `bins` equal bins over [lo, hi] (lo < hi), each source
// bin spread in proportion to overlap, then cumulative rounding (as merge()):
// the total is preserved exactly; mass of source bins reaching outside [lo, hi]
// goes to the edge bins. Used by merge() and by calibration to re-grid around 0.
std::vector<uint64_t> rebin_counts(const Histogram& h, double lo, double hi, int bins);

}  // namespace quant::profile
