#include "libquant/profile/histogram.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <string>

namespace quant::profile {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Number of doublings after which `edge` (moving away from `anchor`) passes `target`.
int doublings_needed(double anchor, double& edge, double target, bool upward) {
  int k = 0;
  while (upward ? target > edge : target < edge) {
    edge = edge + (edge - anchor);
    ++k;
  }
  return k;
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

}  // namespace

Histogram::Histogram(int bins) : counts_(static_cast<size_t>(bins), 0) { assert(bins >= 1 && bins <= kMaxBins); }

double Histogram::bin_lower_edge(int i) const {
  if (i >= bins()) return hi_;
  return lo_ + (hi_ - lo_) * i / bins();
}

double Histogram::mean() const {
  return count_ ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
}

void Histogram::grow_to(double batch_min, double batch_max) {
  const uint64_t bins = counts_.size();
  // Merging 2^k adjacent bins at once equals k successive pair merges.
  auto merge_groups = [&](int k, bool upward) {
    if (k == 0) return;
    std::vector<uint64_t> merged(bins, 0);
    for (uint64_t j = 0; j < bins; ++j) {
      uint64_t from_anchor = upward ? j : bins - 1 - j;
      uint64_t group = k >= 63 ? 0 : from_anchor >> k;
      merged[upward ? group : bins - 1 - group] += counts_[j];
    }
    counts_.swap(merged);
  };
  double new_hi = hi_;
  merge_groups(doublings_needed(lo_, new_hi, batch_max, true), true);
  hi_ = new_hi;
  double new_lo = lo_;
  merge_groups(doublings_needed(hi_, new_lo, batch_min, false), false);
  lo_ = new_lo;
}

void Histogram::add(const float* x, int64_t n) {
  double batch_min = std::numeric_limits<double>::infinity();
  double batch_max = -batch_min;
  double batch_sum = 0;
  uint64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    if (std::isnan(v)) {
      ++nan_count_;
    } else if (std::isinf(v)) {
      ++inf_count_;
    } else {
      batch_min = std::min<double>(batch_min, v);
      batch_max = std::max<double>(batch_max, v);
      batch_sum += v;
      ++finite;
    }
  }
  if (finite == 0) return;

  if (count_ == 0) {
    lo_ = batch_min;
    hi_ = batch_max;
    if (lo_ == hi_) {
      double d = std::max(std::abs(lo_), 1.0) * std::ldexp(1.0, -20);
      lo_ -= d;
      hi_ += d;
    }
    min_ = batch_min;
    max_ = batch_max;
  } else {
    grow_to(batch_min, batch_max);
    min_ = std::min(min_, batch_min);
    max_ = std::max(max_, batch_max);
  }

  const double scale = static_cast<double>(counts_.size()) / (hi_ - lo_);
  const int64_t last = static_cast<int64_t>(counts_.size()) - 1;
  uint64_t* counts = counts_.data();
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    if (!std::isfinite(v)) continue;
    auto bin = static_cast<int64_t>((static_cast<double>(v) - lo_) * scale);
    counts[std::clamp<int64_t>(bin, 0, last)]++;
  }
  count_ += finite;
  sum_ += batch_sum;
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
  h.counts_ = std::move(f.counts);
  h.min_ = f.min;
  h.max_ = f.max;
  h.sum_ = f.sum;
  h.count_ = total;
  return h;
}

Histogram Histogram::merge(const Histogram& a, const Histogram& b) {
  Histogram out(std::max(a.bins(), b.bins()));
  out.nan_count_ = a.nan_count_ + b.nan_count_;
  out.inf_count_ = a.inf_count_ + b.inf_count_;
  if (a.empty() && b.empty()) return out;
  if (a.empty() || b.empty()) {
    const Histogram& src = a.empty() ? b : a;
    out.lo_ = src.lo_;
    out.hi_ = src.hi_;
  } else {
    out.lo_ = std::min(a.lo_, b.lo_);
    out.hi_ = std::max(a.hi_, b.hi_);
  }

  std::vector<double> mass(static_cast<size_t>(out.bins()), 0.0);
  add_proportional(a, out.lo_, out.hi_, mass);
  add_proportional(b, out.lo_, out.hi_, mass);
  const uint64_t total = a.count_ + b.count_;
  out.counts_ = cumulative_round(mass, total);
  out.count_ = total;
  out.sum_ = a.sum_ + b.sum_;
  out.min_ = a.empty() ? b.min_ : b.empty() ? a.min_ : std::min(a.min_, b.min_);
  out.max_ = a.empty() ? b.max_ : b.empty() ? a.max_ : std::max(a.max_, b.max_);
  return out;
}

std::vector<uint64_t> rebin_counts(const Histogram& h, double lo, double hi, int bins) {
  assert(lo < hi && bins >= 1);
  std::vector<double> mass(static_cast<size_t>(bins), 0.0);
  add_proportional(h, lo, hi, mass);
  return cumulative_round(mass, h.count());
}

}  // namespace quant::profile
