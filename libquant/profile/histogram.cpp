#include "libquant/profile/histogram.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "libquant/profile/batch_scan.h"

namespace quant::profile {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Adds `src`'s counts to `mass`, a grid of equal bins over [lo, hi], each source
// bin in proportion to its overlap with the target bins (values are assumed
// uniform inside a bin); parts outside [lo, hi] go to the edge bins.
void add_proportional(const Histogram& src, double lo, double hi, std::vector<double>& mass) {
  if (src.empty()) return;
  const int bins = static_cast<int>(mass.size());
  auto edge = [&](int t) { return t >= bins ? hi : lo + (hi - lo) * t / bins; };
  const double scale = bins / (hi - lo);
  for (int i = 0; i < src.bins(); ++i) {
    uint64_t c = src.counts()[static_cast<size_t>(i)];
    if (c == 0) continue;
    double s0 = src.bin_lower_edge(i), s1 = src.bin_lower_edge(i + 1);
    double width = s1 - s0;
    if (s0 < lo) mass.front() += static_cast<double>(c) * ((std::min(s1, lo) - s0) / width);
    if (s1 > hi) mass.back() += static_cast<double>(c) * ((s1 - std::max(s0, hi)) / width);
    // Start one bin early: the floor may land past s0 by rounding.
    int t = static_cast<int>(std::clamp((s0 - lo) * scale - 1, 0.0, bins - 1.0));
    for (; t < bins && edge(t) < s1; ++t) {
      double overlap = std::min(s1, edge(t + 1)) - std::max(s0, edge(t));
      if (overlap > 0) mass[static_cast<size_t>(t)] += static_cast<double>(c) * (overlap / width);
    }
  }
}

// Integer counts summing to exactly `total`: bin t gets round(C_t) - round(C_{t-1})
// of the running sum C, so no bin goes negative and none drifts by more than ~1.
std::vector<uint64_t> cumulative_round(const std::vector<double>& mass, uint64_t total) {
  std::vector<uint64_t> out(mass.size(), 0);
  double running = 0;
  uint64_t prev = 0;
  for (size_t t = 0; t < mass.size(); ++t) {
    running += mass[t];
    uint64_t upto = t + 1 == mass.size() ? total
                                         : std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(running)), prev, total);
    out[t] = upto - prev;
    prev = upto;
  }
  return out;
}

// Counts of consecutive lattice cells: cell first + j (2^e wide) holds counts[j].
template <class Count>
struct CellRun {
  std::span<const Count> counts;
  int e = 0;
  int64_t first = 0;
};

// Adds `src`'s counts (exponent <= e) to `dst`, the bins of the lattice
// (e, first): cell k moves to floor(k / 2^(e - src.e)). Cells outside dst's
// bins (only possible for hand-written, non-canonical profiles) go to the edge
// bins. With [cell_lo, cell_hi], each source cell is first clamped to that
// range (the cells of a clamped value are the clamped cells of the value).
template <class Count, class ToCount>
void add_cells(CellRun<Count> src, int e, int64_t first, std::vector<ToCount>& dst,
               int64_t cell_lo = std::numeric_limits<int64_t>::min(),
               int64_t cell_hi = std::numeric_limits<int64_t>::max()) {
  assert(e >= src.e && cell_lo <= cell_hi);
  const int shift = std::min(e - src.e, 63);  // |cell| < 2^63: a shift of 63 floors to 0 or -1
  const int64_t last = static_cast<int64_t>(dst.size()) - 1;
  // Consecutive source cells go to the same bin 2^shift at a time: their sum
  // is kept in a register and added once (adding to memory each time would
  // wait on the previous add's store). No test for empty cells: adding 0 is
  // cheaper than a branch mispredicted along a distribution's tails.
  size_t bin = 0;
  ToCount sum = 0;
  for (size_t j = 0; j < src.counts.size(); ++j) {
    // arithmetic shift: floor division
    const int64_t cell = std::clamp(src.first + static_cast<int64_t>(j), cell_lo, cell_hi) >> shift;
    const auto at = static_cast<size_t>(std::clamp<int64_t>(cell - first, 0, last));
    if (at != bin) {
      dst[bin] += sum;
      bin = at;
      sum = 0;
    }
    sum += src.counts[j];
  }
  dst[bin] += sum;
}

int64_t cell_of(double v, int e) {
  const double cell = std::floor(std::ldexp(v, -e));
  assert(std::abs(cell) < 0x1p62);  // callers keep v within reach of lattice e
  return static_cast<int64_t>(cell);
}

// The cells of `counts` (lattice e, first) that values in [lo, hi] fall in,
// clamped to its ends: the only ones a pass over such values fills.
template <class Count>
CellRun<Count> used_run(const std::vector<Count>& counts, int e, int64_t first, double lo, double hi) {
  const double last = static_cast<double>(counts.size()) - 1;
  // In double: lo or hi may lie far outside the cells (a block that widens the range).
  auto index = [&](double v) {
    return static_cast<size_t>(std::clamp(std::floor(std::ldexp(v, -e)) - static_cast<double>(first), 0.0, last));
  };
  const size_t a = index(lo), b = index(hi);
  return {std::span(counts).subspan(a, b - a + 1), e, first + static_cast<int64_t>(a)};
}

// Counts one block binned by scan_block: its `hot` values in bin `hot`, the
// others' bins listed in `cold`. (Prefetching the next block from this loop,
// whose stores leave the load ports idle, was tried: it sped up a replay of
// activations from memory, and slowed qprofile, whose activations are in
// cache, by 10%. Counts of 32 bits instead of 64, half the cache lines, were
// 30% slower.)
void add_block_bins(const BlockScan& block, const int32_t* cold, int32_t hot, uint64_t* counts) {
  // A local bound: block.cold is an int64_t, which the uint64_t increments
  // may alias, so the compiler would load it again after every one.
  const int64_t n = block.cold;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    counts[cold[j]]++;
    counts[cold[j + 1]]++;
    counts[cold[j + 2]]++;
    counts[cold[j + 3]]++;
  }
  for (; j < n; ++j) counts[cold[j]]++;
  counts[hot] += block.hot;
}

// Whether a block's scan tells the bin of 0 apart (BinLattice::count_hot):
// when the last block that did found it holding 1 value in 32 or more (a
// Relu output's zeros), and on every 8th block, to notice such runs where
// they start later in a tensor. Elsewhere (most activations, and a clamped
// pair's x, whose zeros are not yet clamped) the test costs more than the
// rare increments of one counter in a row it would save.
class HotProbe {
 public:
  bool count_hot(int64_t block) const { return runs_ || block % 8 == 0; }
  void saw(uint64_t hot, int64_t len) { runs_ = hot * 32 >= static_cast<uint64_t>(len); }

 private:
  bool runs_ = true;
};

}  // namespace

Histogram::Histogram(int bins) : counts_(static_cast<size_t>(bins), 0) { assert(bins >= 1 && bins <= kMaxBins); }

int Histogram::floor_exponent(double absmax) {
  // Finer cells than half a float32 ulp of the largest value cannot separate
  // anything, and without a floor a constant tensor would need e = -infinity.
  constexpr double kSmallestNormal = 0x1p-126;
  return std::ilogb(std::max(absmax, kSmallestNormal)) - 24;
}

int Histogram::fit_exponent(double lo, double hi, int bins) {
  assert(lo <= hi && std::isfinite(lo) && std::isfinite(hi));
  int e = floor_exponent(std::max(std::abs(lo), std::abs(hi)));
  // The cell count exceeds (hi - lo) / 2^e, so no e below ilogb((hi - lo) / bins) fits.
  const double per_bin = (hi - lo) / bins;
  if (per_bin > 0) e = std::max(e, std::ilogb(per_bin));
  // The cell count never increases with e, so the first e that fits is the smallest.
  while (cell_of(hi, e) - cell_of(lo, e) + 1 > bins) ++e;
  return e;
}

double Histogram::bin_lower_edge(int i) const {
  if (i >= bins()) return hi_;
  if (lattice_ && !empty()) return std::ldexp(static_cast<double>(first_ + i), exp_);
  return lo_ + (hi_ - lo_) * i / bins();
}

double Histogram::mean() const {
  return count_ ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
}

void Histogram::set_edges() {
  lo_ = std::ldexp(static_cast<double>(first_), exp_);
  hi_ = std::ldexp(static_cast<double>(first_ + bins()), exp_);
}

void Histogram::relayout(int e, int64_t first, int bins) {
  std::vector<uint64_t> moved(static_cast<size_t>(bins), 0);
  if (!empty()) add_cells(CellRun<uint64_t>{counts_, exp_, first_}, e, first, moved);
  counts_.swap(moved);
  exp_ = e;
  first_ = first;
  set_edges();
}

// A hand-written histogram on another grid: its counts spread proportionally onto
// the lattice its [min, max] would get, so that later growth and merges are exact.
static Histogram onto_lattice(const Histogram& h) {
  if (h.on_lattice()) return h;
  HistogramFields f = h.fields();
  if (!h.empty()) {
    int e = Histogram::fit_exponent(h.min(), h.max(), h.bins());
    int64_t first = cell_of(h.min(), e);
    f.lo = std::ldexp(static_cast<double>(first), e);
    f.hi = std::ldexp(static_cast<double>(first + h.bins()), e);
    f.counts = rebin_counts(h, f.lo, f.hi, h.bins());
  } else {
    f.lo = f.hi = 0;
  }
  auto out = Histogram::from_fields(std::move(f));
  assert(out.has_value() && out->on_lattice());
  return std::move(out).value();
}

std::pair<int, int64_t> Histogram::widened_lattice(float lo, float hi) const {
  const double new_min = empty() ? lo : std::min<double>(min_, lo);
  const double new_max = empty() ? hi : std::max<double>(max_, hi);
  int e = fit_exponent(new_min, new_max, bins());
  if (!empty()) e = std::max(e, exp_);  // only a hand-written lattice can be coarser than needed
  return {e, cell_of(new_min, e)};
}

void Histogram::widen(float lo, float hi) {
  if (!lattice_) *this = onto_lattice(*this);
  const auto [e, first] = widened_lattice(lo, hi);
  if (e != exp_ || first != first_ || empty()) relayout(e, first, bins());
  min_ = empty() ? lo : std::min<double>(min_, lo);
  max_ = empty() ? hi : std::max<double>(max_, hi);
}

bool Histogram::canonical() const {
  return empty() || (lattice_ && exp_ == fit_exponent(min_, max_, bins()) && first_ == cell_of(min_, exp_));
}

void Histogram::add_in_two_passes(const float* x, int64_t n) {
  // Statistics first, as they may widen the lattice, then the bins.
  const BatchStats batch = scan_batch(x, n);
  nan_count_ += batch.nan;
  inf_count_ += batch.inf;
  if (batch.finite == 0) return;
  widen(batch.min, batch.max);
  count_cells(x, n, exp_, first_, counts_.data(), bins());
  count_ += batch.finite;
  sum_ += batch.sum;
}

void Histogram::add(const float* x, int64_t n) {
  // The lattice depends on min and max only (the smallest fitting exponent grows
  // with the range), and moving counts to a coarser lattice is exact (header).
  // So the activation can be taken block by block, each block's statistics and
  // bins in one pass while it is in the L1 cache, moving to a wider lattice when
  // a block widens the range: the result is add_in_two_passes' to the bit. That
  // holds from a lattice add() itself made (or an empty histogram); a
  // hand-written one keeps the two passes.
  if (!scan_block_available() || !canonical()) return add_in_two_passes(x, n);

  // 4096 values: the block and its bins (16 KiB each) fit the L1 cache together.
  constexpr int64_t kBlock = 4096;
  thread_local std::vector<int32_t> cold_bins(static_cast<size_t>(kBlock) + 16);
  double lanes[8] = {};
  bool any_finite = false;
  HotProbe probe;
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t len = std::min(kBlock, n - at);
    const bool binned = !empty() && lattice_fits_simd(exp_, first_);
    const BinLattice lattice{exp_, first_, bins(), static_cast<int32_t>(std::clamp<int64_t>(-first_, 0, bins() - 1)),
                             probe.count_hot(at / kBlock)};
    const BlockScan block = scan_block(x + at, len, lanes, binned ? &lattice : nullptr, cold_bins.data());
    if (binned && lattice.count_hot) probe.saw(block.hot, len);
    nan_count_ += block.stats.nan;
    inf_count_ += block.stats.inf;
    if (block.stats.finite == 0) continue;
    any_finite = true;
    if (binned && block.stats.min >= min_ && block.stats.max <= max_) {
      // The range (so the lattice) is unchanged: the bins are count_cells'.
      add_block_bins(block, cold_bins.data(), lattice.hot, counts_.data());
    } else {
      widen(block.stats.min, block.stats.max);
      count_cells(x + at, len, exp_, first_, counts_.data(), bins());
    }
    count_ += block.stats.finite;
  }
  if (any_finite) sum_ += combine_lanes(lanes);
}

// clip() of batch_scan.cpp for one finite value, -0 reported as +0: the
// extremes scan_batch_clamped gives y when x's are lo_x and hi_x (clamping is
// monotone).
static float clamped_extreme(float v, float lo, float hi) {
  const float c = std::min(std::max(v, lo), hi);
  return c == 0 ? 0.0f : c;
}

std::optional<Histogram::PairLattice> Histogram::pair_lattice(const Histogram& clamped, float x_min, float x_max,
                                                                float lo, float hi) const {
  // The finer of the two lattices the values will have; its cells must stay
  // within count_cells' reach (|x * 2^-e| < 2^25) and few enough to fold cheaply.
  const int e = std::min(widened_lattice(x_min, x_max).first,
                         clamped.widened_lattice(clamped_extreme(x_min, lo, hi), clamped_extreme(x_max, lo, hi)).first);
  // The exponent first: below x's floor exponent the cells of x_min and x_max
  // may not fit an int64_t (a constant y has e = -150), and converting them
  // would be undefined.
  if (e < floor_exponent(std::max(std::abs(x_min), std::abs(x_max)))) return std::nullopt;
  const int64_t first = cell_of(x_min, e), last = cell_of(x_max, e);
  if (last - first >= kPairCells * int64_t{bins()}) return std::nullopt;
  return PairLattice{e, first, last};
}

template <class Count>
void Histogram::add_pair_cells(const std::vector<Count>& fine, int e, int64_t first, float lo, float hi, float x_min,
                               float x_max, Histogram& clamped) {
  const CellRun run = used_run(fine, e, first, x_min, x_max);
  add_cells(run, exp_, first_, counts_);
  // y's cells are x's clamped to the bounds' cells. (Below, that is also
  // where add_cells' edge clamp would put them: y's lattice starts at y's
  // minimum, which is lo whenever a value is clamped up to it.)
  add_cells(run, clamped.exp_, clamped.first_, clamped.counts_,
            lo > x_min ? cell_of(lo, e) : std::numeric_limits<int64_t>::min(),
            hi < x_max ? cell_of(hi, e) : std::numeric_limits<int64_t>::max());
}

bool Histogram::add_with_clamped(const float* x, int64_t n, float lo, float hi, Histogram& clamped) {
  if (!(lo <= hi) || !canonical() || !clamped.canonical()) return false;
  if (!scan_block_available()) return add_with_clamped_two_passes(x, n, lo, hi, clamped);
  // One pass, block by block as add(): x's statistics, the sums of x and of y,
  // and x's cells in `fine`, on a working lattice: the pair lattice of the
  // range seen when it was set, its cells reaching past that range on both
  // sides, so that a block widening the range a little is still binned in
  // the pass. The pair lattice only coarsens as the range grows (the
  // exponents add() picks grow with it), and counts fold exactly onto a
  // coarser lattice, so the working lattice folds into both histograms at the
  // end as the final pair lattice would. Nothing is changed before the end:
  // a NaN or an infinity, in any block, leaves both histograms as they were.
  // A working lattice scan_block cannot bin on (lattice_fits_simd: values
  // near the float range's ends) is refused.
  constexpr int64_t kBlock = 4096;
  thread_local std::vector<int32_t> cold_bins(static_cast<size_t>(kBlock) + 16);
  thread_local std::vector<uint64_t> fine, moved;
  double x_lanes[8] = {}, y_lanes[8] = {};
  const ClampSum clamp{lo, hi, y_lanes};
  float x_min = std::numeric_limits<float>::infinity(), x_max = -x_min;
  std::optional<PairLattice> lat;  // of [x_min, x_max]: none before the first value and where the cells do not fit
  PairLattice work;      // every value so far is in `fine` on it, cells work.first..last, when `working`
  bool working = false;
  BinLattice bin_on;   // work as scan_block takes it
  double cover_lo = 0, cover_hi = 0;  // the values inside the working cells: [cover_lo, cover_hi)
  // Bins x[0..len) on `lattice` into `counts` (the statistics are not wanted again).
  auto bin_again = [&](const float* v, int64_t len, const BinLattice& lattice, uint64_t* counts) {
    for (int64_t at = 0; at < len; at += kBlock) {
      double unused[8] = {};
      const BlockScan b = scan_block(v + at, std::min(kBlock, len - at), unused, &lattice, cold_bins.data());
      add_block_bins(b, cold_bins.data(), lattice.hot, counts);
    }
  };
  HotProbe probe;
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t len = std::min(kBlock, n - at);
    bin_on.count_hot = probe.count_hot(at / kBlock);
    const BlockScan block = scan_block(x + at, len, x_lanes, working ? &bin_on : nullptr, cold_bins.data(), &clamp);
    if (working && bin_on.count_hot) probe.saw(block.hot, len);
    if (block.stats.nan != 0 || block.stats.inf != 0) return false;  // Clip turns an infinity into a bound
    if (block.stats.min < x_min || block.stats.max > x_max) {
      x_min = std::min(x_min, block.stats.min);
      x_max = std::max(x_max, block.stats.max);
      lat = pair_lattice(clamped, x_min, x_max, lo, hi);
    }
    const bool covered = working && block.stats.min >= cover_lo && block.stats.max < cover_hi;
    if (covered) add_block_bins(block, cold_bins.data(), bin_on.hot, fine.data());
    if (covered && (!lat || lat->e == work.e)) continue;
    const PairLattice next = lat ? working_lattice(*lat) : PairLattice{};
    if (!lat || !lattice_fits_simd(next.e, next.first) || !lattice_fits_simd(next.e, next.last)) {
      // Too many cells for the range so far, or cells scan_block cannot bin
      // on; a wider range may need fewer (the first values all below lo: y's
      // range a point), and then every value so far is counted again.
      working = false;
      continue;
    }
    // Onto a new working lattice: the block's values are binned on the old
    // one when it covered them (and the new lattice is coarser: fewer cells
    // to scatter into), else binned again on the new one; every value so far
    // when there was none.
    moved.assign(static_cast<size_t>(next.last - next.first + 1), 0);
    const int cells = static_cast<int>(moved.size());
    const BinLattice next_on{next.e, next.first, cells, static_cast<int32_t>(std::clamp<int64_t>(-next.first, 0, cells - 1))};
    if (!working)
      bin_again(x, at + len, next_on, moved.data());
    else
      add_cells(used_run(fine, work.e, work.first, x_min, x_max), next.e, next.first, moved);
    if (working && !covered) bin_again(x + at, len, next_on, moved.data());
    fine.swap(moved);
    work = next;
    bin_on = next_on;
    working = true;
    cover_lo = std::ldexp(static_cast<double>(next.first), next.e);
    cover_hi = std::ldexp(static_cast<double>(next.last + 1), next.e);
  }
  if (n == 0) return true;  // nothing to add to either
  // A bound beyond every value clamps nothing (and may lie off any usable
  // lattice: FLT_MAX, Clip's default); one beyond them all on the far side
  // makes y constant, which separate adds handle.
  if (lo > x_max || hi < x_min || !lat || !working) return false;
  assert(work.e <= lat->e);
  const float y_min = clamped_extreme(x_min, lo, hi), y_max = clamped_extreme(x_max, lo, hi);
  widen(x_min, x_max);
  clamped.widen(y_min, y_max);
  add_pair_cells(fine, work.e, work.first, lo, hi, x_min, x_max, clamped);
  count_ += static_cast<uint64_t>(n);
  sum_ += combine_lanes(x_lanes);
  clamped.count_ += static_cast<uint64_t>(n);
  clamped.sum_ += combine_lanes(y_lanes);
  return true;
}

Histogram::PairLattice Histogram::working_lattice(const PairLattice& lat) const {
  // Half as many cells as the range has on either side, within count_cells'
  // reach (|cell| < 2^25).
  constexpr int64_t kReach = int64_t{1} << 25;
  const int64_t pad = (lat.last - lat.first + 1) / 2;
  return PairLattice{lat.e, std::max(lat.first - pad, -kReach), std::min(lat.last + pad, kReach - 1)};
}

bool Histogram::add_with_clamped_two_passes(const float* x, int64_t n, float lo, float hi, Histogram& clamped) {
  const ClampedScan st = scan_batch_clamped(x, n, lo, hi);
  if (st.x_nan != 0 || st.x_inf != 0) return false;  // Clip turns an infinity into a bound: separate adds
  if (st.y.finite == 0) return true;                   // nothing to add to either
  if (lo > st.x_max || hi < st.x_min) return false;   // as add_with_clamped
  const std::optional<PairLattice> lat = pair_lattice(clamped, st.x_min, st.x_max, lo, hi);
  if (!lat) return false;
  widen(st.x_min, st.x_max);
  clamped.widen(st.y.min, st.y.max);
  thread_local std::vector<uint64_t> fine;
  fine.assign(static_cast<size_t>(lat->last - lat->first + 1), 0);
  count_cells(x, n, lat->e, lat->first, fine.data(), static_cast<int>(fine.size()));
  const double x_sum = scan_batch(x, n).sum;
  add_pair_cells(fine, lat->e, lat->first, lo, hi, st.x_min, st.x_max, clamped);
  count_ += st.y.finite;
  sum_ += x_sum;
  clamped.count_ += st.y.finite;
  clamped.sum_ += st.y.sum;
  return true;
}

HistogramFields Histogram::fields() const {
  return {lo_, hi_, counts_, min_, max_, sum_, nan_count_, inf_count_};
}

Expected<Histogram> Histogram::from_fields(HistogramFields f) {
  auto bad = [](const std::string& s) { return Status::bad_input(s); };
  if (f.counts.empty() || f.counts.size() > static_cast<size_t>(kMaxBins))
    return bad("histogram.counts: must hold 1 to " + std::to_string(kMaxBins) + " bins, has " + std::to_string(f.counts.size()));
  uint64_t total = 0;
  for (uint64_t c : f.counts) {
    if (c > UINT64_MAX - total) return bad("histogram.counts: total overflows 64 bits");
    total += c;
  }
  if (!std::isfinite(f.lo) || !std::isfinite(f.hi) || !std::isfinite(f.hi - f.lo))
    return bad("histogram.lo/hi: must be finite numbers with a finite difference");
  if (f.lo > f.hi) return bad("histogram.lo (" + num(f.lo) + ") is greater than histogram.hi (" + num(f.hi) + ")");
  Histogram h(static_cast<int>(f.counts.size()));
  h.nan_count_ = f.nan_count;
  h.inf_count_ = f.inf_count;
  h.lo_ = f.lo;
  h.hi_ = f.hi;
  if (total == 0) return h;  // nothing finite seen: min/max/sum carry no information

  if (!(f.lo < f.hi)) return bad("histogram.lo equals histogram.hi but the histogram holds values");
  if (!std::isfinite(f.min) || !std::isfinite(f.max)) return bad("min/max: must be finite numbers when count > 0");
  if (f.min > f.max) return bad("min (" + num(f.min) + ") is greater than max (" + num(f.max) + ")");
  if (f.min < f.lo || f.max > f.hi)
    return bad("min/max [" + num(f.min) + ", " + num(f.max) + "] lie outside histogram [lo, hi] = [" + num(f.lo) + ", " +
               num(f.hi) + "]");
  if (!std::isfinite(f.sum)) return bad("sum/mean: must be a finite number");
  // On the lattice when the bin width is a power of two 2^e and lo a multiple of it
  // (hi - lo is then exact, so the division recovers 2^e exactly).
  const double width = (f.hi - f.lo) / static_cast<double>(f.counts.size());
  const int e = std::ilogb(width);
  const double first = std::ldexp(f.lo, -e);
  h.lattice_ = std::ldexp(1.0, e) == width && first == std::floor(first) && std::abs(first) < 0x1p53 &&
               std::ldexp(first + static_cast<double>(f.counts.size()), e) == f.hi;
  if (h.lattice_) {
    h.exp_ = e;
    h.first_ = static_cast<int64_t>(first);
  }
  h.counts_ = std::move(f.counts);
  h.min_ = f.min;
  h.max_ = f.max;
  h.sum_ = f.sum;
  h.count_ = total;
  return h;
}

Histogram Histogram::merge(const Histogram& a_in, const Histogram& b_in) {
  const Histogram a = onto_lattice(a_in), b = onto_lattice(b_in);
  Histogram out(std::max(a.bins(), b.bins()));
  out.nan_count_ = a.nan_count_ + b.nan_count_;
  out.inf_count_ = a.inf_count_ + b.inf_count_;
  if (a.empty() && b.empty()) return out;
  out.min_ = a.empty() ? b.min_ : b.empty() ? a.min_ : std::min(a.min_, b.min_);
  out.max_ = a.empty() ? b.max_ : b.empty() ? a.max_ : std::max(a.max_, b.max_);
  int e = fit_exponent(out.min_, out.max_, out.bins());
  if (!a.empty()) e = std::max(e, a.exp_);
  if (!b.empty()) e = std::max(e, b.exp_);
  out.exp_ = e;
  out.first_ = cell_of(out.min_, e);
  if (!a.empty()) add_cells(CellRun<uint64_t>{a.counts_, a.exp_, a.first_}, e, out.first_, out.counts_);
  if (!b.empty()) add_cells(CellRun<uint64_t>{b.counts_, b.exp_, b.first_}, e, out.first_, out.counts_);
  out.set_edges();
  out.count_ = a.count_ + b.count_;
  out.sum_ = a.sum_ + b.sum_;
  return out;
}

std::vector<uint64_t> rebin_counts(const Histogram& h, double lo, double hi, int bins) {
  assert(lo < hi && bins >= 1);
  std::vector<double> mass(static_cast<size_t>(bins), 0.0);
  add_proportional(h, lo, hi, mass);
  return cumulative_round(mass, h.count());
}

}  // namespace quant::profile
