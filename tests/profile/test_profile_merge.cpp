#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "libquant/profile/profile.h"

using namespace quant;
using quant::profile::Histogram;
using quant::profile::Profile;
using quant::profile::TensorProfile;

namespace {

Profile profile_of(int bins, const std::vector<std::pair<std::string, std::vector<float>>>& tensors, int64_t samples) {
  Profile p;
  p.bins = bins;
  p.samples = samples;
  for (const auto& [name, values] : tensors) {
    TensorProfile t{"float32", {1, static_cast<int64_t>(values.size())}, Histogram(bins)};
    t.hist.add(values.data(), static_cast<int64_t>(values.size()));
    p.tensors.emplace(name, std::move(t));
  }
  return p;
}

}  // namespace

TEST_CASE("profile merge: tensors combine, samples add up", "[profile][merge]") {
  Profile a = profile_of(64, {{"x", {1, 2, 3}}, {"only_a", {5}}}, 2);
  Profile b = profile_of(64, {{"x", {-4, 9}}, {"only_b", {7, 8}}}, 3);
  Profile whole = profile_of(64, {{"x", {1, 2, 3, -4, 9}}}, 5);
  profile::merge_into(a, std::move(b));
  CHECK(a.samples == 5);
  REQUIRE(a.tensors.size() == 3);
  const Histogram& x = a.tensors.at("x").hist;
  CHECK(x.counts() == whole.tensors.at("x").hist.counts());
  CHECK(x.min() == -4);
  CHECK(x.max() == 9);
  CHECK(a.tensors.at("only_b").hist.count() == 2);
}

TEST_CASE("profile merge: different bin counts move every tensor to the larger", "[profile][merge]") {
  Profile a = profile_of(32, {{"x", {1, 2, 3}}, {"only_a", {5}}}, 1);
  Profile b = profile_of(128, {{"x", {4}}}, 1);
  profile::merge_into(a, std::move(b));
  CHECK(a.bins == 128);
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    CHECK(t.hist.bins() == 128);
  }
  CHECK(a.tensors.at("only_a").hist.count() == 1);
  CHECK(a.tensors.at("x").hist.count() == 4);
  // The result is valid for the writer (every histogram has `bins` counts).
  CHECK(profile::profile_from_json(profile::profile_to_json(a), "m.json").has_value());
}

// ---- different bin counts, bin by bin -------------------------------------
//
// The expected histogram, from the values and the rule of profiles/README.md
// (re-binning rule) alone: a histogram of N bins that add() filled sits on
// cells of 2^e with e = fit(min, max, N); merging cannot split a count, so the
// merged cells are the coarsest of the fit of the merged range at the larger
// bin count and of each input's own cells; each value then lies in cell
// floor(v / 2^e), counted from the cell holding the merged min.
namespace {

int floor_exponent(double absmax) { return absmax == 0 ? -150 : std::ilogb(absmax) - 24; }

int64_t cell(double v, int e) { return static_cast<int64_t>(std::floor(std::ldexp(v, -e))); }

int fit(double lo, double hi, int bins) {
  int e = floor_exponent(std::max(std::abs(lo), std::abs(hi)));
  while (cell(hi, e) - cell(lo, e) + 1 > bins) ++e;
  return e;
}

struct ExpectedBins {
  int e = 0;
  double lo = 0, hi = 0;
  std::vector<uint64_t> counts;
};

// The merge of histograms of `parts` (values, bins each) onto `bins` bins.
ExpectedBins expected_merge(const std::vector<std::pair<std::vector<float>, int>>& parts, int bins) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& [values, n] : parts)
    for (float v : values) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  ExpectedBins x;
  x.e = fit(lo, hi, bins);
  for (const auto& [values, n] : parts) {
    const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
    x.e = std::max(x.e, fit(*mn, *mx, n));
  }
  const int64_t first = cell(lo, x.e);
  x.lo = std::ldexp(static_cast<double>(first), x.e);
  x.hi = std::ldexp(static_cast<double>(first + bins), x.e);
  x.counts.assign(static_cast<size_t>(bins), 0);
  for (const auto& [values, n] : parts)
    for (float v : values) {
      const int64_t b = cell(v, x.e) - first;
      REQUIRE(b >= 0);
      REQUIRE(b < bins);
      ++x.counts[static_cast<size_t>(b)];
    }
  return x;
}

std::vector<float> uniform(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void check_bins(const Histogram& h, const ExpectedBins& x) {
  CHECK(h.on_lattice());
  CHECK(h.exponent() == x.e);
  CHECK(h.lo() == x.lo);
  CHECK(h.hi() == x.hi);
  REQUIRE(h.bins() == static_cast<int>(x.counts.size()));
  for (size_t i = 0; i < x.counts.size(); ++i) {
    INFO("bin " << i << " [" << h.bin_lower_edge(static_cast<int>(i)) << ", " << h.bin_lower_edge(static_cast<int>(i) + 1) << ")");
    CHECK(h.counts()[i] == x.counts[i]);
  }
}

}  // namespace

TEST_CASE("profile merge: different bin counts give the expected histogram bin by bin", "[profile][merge]") {
  std::mt19937 rng(7);
  struct Case {
    const char* what;
    int bins_a, bins_b;
    float a_lo, a_hi, b_lo, b_hi;
  };
  for (const Case& c : {Case{"coarse shard narrower than the fine one", 32, 128, -3, 5, -1, 12},
                        Case{"coarse shard wider: its cells win", 16, 200, -40, 90, 0.5f, 2},
                        Case{"fine shard wider", 48, 256, 0, 1, -100, 300},
                        Case{"disjoint ranges, bin counts not powers of two", 100, 37, 10, 11, -0.25f, 0.125f}}) {
    DYNAMIC_SECTION(c.what) {
      const std::vector<float> xa = uniform(rng, 500, c.a_lo, c.a_hi), xb = uniform(rng, 700, c.b_lo, c.b_hi);
      const std::vector<float> only_a = uniform(rng, 300, c.a_lo, c.a_hi), only_b = uniform(rng, 200, c.b_lo, c.b_hi);
      Profile a = profile_of(c.bins_a, {{"x", xa}, {"only_a", only_a}}, 2);
      Profile b = profile_of(c.bins_b, {{"x", xb}, {"only_b", only_b}}, 3);
      const int bins = std::max(c.bins_a, c.bins_b);
      // Either order gives the same bits.
      for (bool a_first : {true, false}) {
        INFO((a_first ? "b merged into a" : "a merged into b"));
        Profile into = a_first ? a : b, other = a_first ? b : a;
        profile::merge_into(into, std::move(other));
        CHECK(into.bins == bins);
        CHECK(into.samples == 5);
        {
          INFO("x");
          check_bins(into.tensors.at("x").hist, expected_merge({{xa, c.bins_a}, {xb, c.bins_b}}, bins));
        }
        {
          INFO("only_a");
          check_bins(into.tensors.at("only_a").hist, expected_merge({{only_a, c.bins_a}}, bins));
        }
        {
          INFO("only_b");
          check_bins(into.tensors.at("only_b").hist, expected_merge({{only_b, c.bins_b}}, bins));
        }
        const Histogram& x = into.tensors.at("x").hist;
        CHECK(x.count() == xa.size() + xb.size());
        CHECK(x.min() == std::min(*std::min_element(xa.begin(), xa.end()), *std::min_element(xb.begin(), xb.end())));
        CHECK(x.max() == std::max(*std::max_element(xa.begin(), xa.end()), *std::max_element(xb.begin(), xb.end())));
        auto back = profile::profile_from_json(profile::profile_to_json(into), "m.json");
        REQUIRE(back.has_value());
        CHECK(back->tensors.at("x").hist.counts() == x.counts());
      }
    }
  }
}
