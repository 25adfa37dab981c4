// A streaming, constant-memory histogram of one activation (in the spirit of
// Glow's profiling: exact min/max plus a histogram), filled sample by sample.
//
// What is tracked: exact min, max, count, sum (double, in the lane order of
// batch_scan.h) of the finite values;
// NaN and +-Inf are only counted (nan_count, inf_count), never folded into
// min/max, the sum or the bins. count() is the number of finite values and
// always equals the sum of counts().
//
// Bins lie on a power-of-two lattice (profiles/README.md, "re-binning rule"):
//  - bin i covers the cell [(first + i) * 2^e, (first + i + 1) * 2^e), so lo = first * 2^e
//    and hi = lo + bins * 2^e; a value v belongs to cell floor(v / 2^e);
//  - e is the smallest exponent, not below floor_exponent(max |v|), for which the cells
//    from the one holding min to the one holding max number at most `bins`; first is
//    the cell holding min.
// When new values widen the range, e grows and each old cell k moves to cell
// floor(k / 2^d): 2^d old bins merge into one, exactly (no count is split). As
// floor(floor(v / 2^a) / 2^b) = floor(v / 2^(a+b)), the result is the histogram the
// whole data would have given at once: it depends on the multiset of values only,
// not on their order, batching, threads or sharding, and merge() is exact.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
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
  // finite values); the error names the offending field. A grid that is not a
  // power-of-two lattice (a hand-written profile) is accepted as is.
  static Expected<Histogram> from_fields(HistogramFields fields);
  HistogramFields fields() const;

  // Adds the values x[0..n): one pass over them where the CPU allows
  // (batch_scan.h, scan_block), with exactly the result of add_in_two_passes.
  void add(const float* x, int64_t n);
  // The definition: statistics of all values (scan_batch), the lattice widened
  // to them, then the bins (count_cells). Tests compare add() with it.
  void add_in_two_passes(const float* x, int64_t n);

  // Adds x[0..n) to this histogram and y = min(max(x, lo), hi) to `clamped`
  // (the output of a Clip with constant bounds lo <= hi, or of a Relu: lo = 0,
  // hi = +inf), with exactly the result of add(x) and clamped.add(y), but
  // binning each value once: on the finer of the two lattices, whose cells
  // fold into either (a cell of y is a clamped cell of x, and coarser cells
  // are unions of finer ones). Returns false, changing neither histogram, where
  // that does not apply (NaN or infinite values, a bound outside the values'
  // range, a lattice that is not add()'s own, or the finer lattice needing
  // more than 4x the bins); the caller then adds y itself.
  bool add_with_clamped(const float* x, int64_t n, float lo, float hi, Histogram& clamped);

  // Combines shards, with max(a.bins, b.bins) bins. On lattice grids (every histogram
  // add() fills) the counts combine exactly: merging histograms of any split of the
  // data with the same bin count gives the histogram of the whole. A non-lattice input
  // is first re-gridded onto the lattice of its [min, max] with rebin_counts().
  // min/max/count/NaN/Inf combine exactly; the sum is a double addition.
  static Histogram merge(const Histogram& a, const Histogram& b);

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  int bins() const { return static_cast<int>(counts_.size()); }
  const std::vector<uint64_t>& counts() const { return counts_; }
  double bin_width() const { return (hi_ - lo_) / bins(); }
  double bin_lower_edge(int i) const;  // edge i in [0, bins]; edge bins == hi
  bool on_lattice() const { return lattice_; }
  int exponent() const { return exp_; }  // bin width 2^exponent() when on_lattice()

  bool empty() const { return count_ == 0; }  // no finite value seen
  double min() const { return min_; }         // NaN when empty()
  double max() const { return max_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double mean() const;  // NaN when empty()
  uint64_t nan_count() const { return nan_count_; }
  uint64_t inf_count() const { return inf_count_; }

  // The finest cell exponent worth keeping for data whose largest magnitude is
  // `absmax`: half a float32 ulp there (2^(ilogb(absmax) - 24)), and 2^-150 for 0.
  static int floor_exponent(double absmax);
  // Smallest e >= floor_exponent(max(|lo|, |hi|)) whose cells from floor(lo / 2^e) to
  // floor(hi / 2^e) number at most `bins`.
  static int fit_exponent(double lo, double hi, int bins);

 private:
  // The lattice a clamped pair is binned on, for x's range [x_min, x_max]:
  // exponent e, cells first..last; none where add_with_clamped does not apply.
  struct PairLattice {
    int e = 0;
    int64_t first = 0, last = 0;
  };
  static constexpr int kPairCells = 4;  // at most this many times the bins
  std::optional<PairLattice> pair_lattice(const Histogram& clamped, float x_min, float x_max, float lo, float hi) const;
  // The cells add_with_clamped bins on while the range is `lat`'s: lat's
  // exponent, its cells widened on both sides.
  PairLattice working_lattice(const PairLattice& lat) const;
  // add_with_clamped without scan_block: a pass for the statistics, then one for the cells.
  bool add_with_clamped_two_passes(const float* x, int64_t n, float lo, float hi, Histogram& clamped);
  // Folds a pair's cells (lattice e, first), x's values in [x_min, x_max], into
  // both histograms (already widened to them).
  template <class Count>
  void add_pair_cells(const std::vector<Count>& fine, int e, int64_t first, float lo, float hi, float x_min, float x_max,
                      Histogram& clamped);
  // On the lattice add() itself keeps (or empty): add() may go block by block.
  bool canonical() const;
  // The lattice (exponent, first cell) that widen(lo, hi) would move to.
  std::pair<int, int64_t> widened_lattice(float lo, float hi) const;
  // Moves the counts onto the lattice (exponent e, first cell `first`), e >= exp_.
  void relayout(int e, int64_t first, int bins);
  // Widens [min, max] by the finite values lo <= hi and moves onto its lattice.
  void widen(float lo, float hi);
  void set_edges();

  double lo_ = 0;
  double hi_ = 0;
  std::vector<uint64_t> counts_;
  bool lattice_ = true;
  int exp_ = 0;
  int64_t first_ = 0;
  double min_ = std::numeric_limits<double>::quiet_NaN();
  double max_ = std::numeric_limits<double>::quiet_NaN();
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t nan_count_ = 0;
  uint64_t inf_count_ = 0;
};

// `h`'s counts on a grid of `bins` equal bins over [lo, hi] (lo < hi), each source
// bin spread in proportion to its overlap (values are assumed uniform inside a bin),
// then cumulative rounding (bin t gets round(C_t) - round(C_{t-1}) of the running
// sum C): the total is preserved exactly; mass of source bins reaching outside
// [lo, hi] goes to the edge bins. Used by calibration to re-grid around 0, by
// `qprofile show` and to bring hand-written histograms onto the lattice.
std::vector<uint64_t> rebin_counts(const Histogram& h, double lo, double hi, int bins);

}  // namespace quant::profile
