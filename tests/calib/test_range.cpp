#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "libquant/calib/range.h"

using namespace quant;
using namespace quant::calib;
using quant::profile::Histogram;

namespace {

Histogram histogram_of(const std::vector<float>& v, int bins = 2048) {
  Histogram h(bins);
  // Fed in chunks, as the profiler does sample by sample.
  for (size_t i = 0; i < v.size(); i += 10000) {
    size_t n = std::min<size_t>(10000, v.size() - i);
    h.add(v.data() + i, static_cast<int64_t>(n));
  }
  return h;
}

std::vector<float> gaussian(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void check_inside(const Range& r, const Histogram& h) {
  CHECK(r.min <= r.max);
  CHECK(r.min >= static_cast<float>(h.min()));
  CHECK(r.max <= static_cast<float>(h.max()));
}

}  // namespace

TEST_CASE("range: minmax of a uniform distribution is exact", "[calib][range]") {
  std::vector<float> v;
  for (int i = 0; i <= 4000; ++i) v.push_back(-1.0f + 4.0f * static_cast<float>(i) / 4000);
  std::shuffle(v.begin(), v.end(), std::mt19937(1));
  Histogram h = histogram_of(v);
  Range r = range_minmax(h);
  CHECK(r.min == -1.0f);
  CHECK(r.max == 3.0f);
  // Without outliers the clipping methods keep (nearly) the whole range.
  Range kl = range_kl(h);
  CHECK(kl.max >= 2.85f);
  Range p = range_percentile(h, 100);
  CHECK(p.min == -1.0f);
  CHECK(p.max == 3.0f);
}

TEST_CASE("range: percentile of a Gaussian is near the analytic quantile", "[calib][range]") {
  Histogram h = histogram_of(gaussian(1000000, 5));
  Range r99 = range_percentile(h, 99);
  CHECK(r99.max == Approx(2.3263).margin(0.02));
  CHECK(r99.min == Approx(-2.3263).margin(0.02));
  Range r999 = range_percentile(h, 99.9);
  CHECK(r999.max == Approx(3.0902).margin(0.04));
  CHECK(r999.min == Approx(-3.0902).margin(0.04));
  check_inside(range_percentile(h), h);
  // Clamped to [50, 100]: 50 collapses on the median.
  Range median = range_percentile(h, 10);
  CHECK(median.min == Approx(0).margin(0.01));
  CHECK(median.max == Approx(0).margin(0.01));
}

TEST_CASE("range: a few far outliers are clipped by kl and mse, not by minmax", "[calib][range]") {
  std::vector<float> v = gaussian(1000000, 9);
  v.push_back(30.0f);
  v.push_back(-30.0f);
  Histogram h = histogram_of(v);
  Range mm = range_minmax(h);
  CHECK(mm.min == -30.0f);
  CHECK(mm.max == 30.0f);

  Range kl = range_kl(h);
  INFO("kl [" << kl.min << ", " << kl.max << "]");
  CHECK(kl.max < 10.0f);
  CHECK(kl.min > -10.0f);
  CHECK(kl.max > 2.0f);  // still covers the bulk
  check_inside(kl, h);

  Range mse = range_mse(h);
  INFO("mse [" << mse.min << ", " << mse.max << "]");
  CHECK(mse.max < 10.0f);
  CHECK(mse.min > -10.0f);
  CHECK(mse.max > 2.0f);
  check_inside(mse, h);
}

TEST_CASE("range: one-sided data stays one-sided", "[calib][range]") {
  std::vector<float> v = gaussian(200000, 4);
  for (float& x : v) x = std::abs(x);  // after a Relu-like op
  v.push_back(40.0f);
  Histogram h = histogram_of(v);
  Range kl = range_kl(h);
  INFO("kl [" << kl.min << ", " << kl.max << "]");
  CHECK(kl.min >= 0.0f);
  CHECK(kl.max < 10.0f);
  CHECK(kl.max > 2.0f);
  // With 2e5 values one outlier at 40 costs less than the coarser step it saves
  // for everyone, so mse clips only part of the way.
  Range mse = range_mse(h);
  CHECK(mse.min >= 0.0f);
  CHECK(mse.max < 40.0f);
  CHECK(mse.max > 2.0f);

  for (float& x : v) x = -x;  // the mirror image
  Histogram neg = histogram_of(v);
  Range kln = range_kl(neg);
  CHECK(kln.max <= 0.0f);
  CHECK(kln.min == Approx(-kl.max).margin(0.1));
}

TEST_CASE("range: degenerate histograms", "[calib][range]") {
  Histogram empty(64);
  for (const char* m : {"minmax", "percentile", "kl", "mse"}) {
    auto r = range_by_name(empty, m);
    REQUIRE(r.has_value());
    CHECK(r->min == 0.0f);
    CHECK(r->max == 0.0f);
  }
  Histogram constant(64);
  std::vector<float> v(100, 2.5f);
  constant.add(v.data(), 100);
  for (const char* m : {"minmax", "percentile", "kl", "mse"}) {
    INFO(m);
    auto r = range_by_name(constant, m);
    REQUIRE(r.has_value());
    CHECK(r->min == 2.5f);
    CHECK(r->max == 2.5f);
  }
  // Very fine histograms are searched on a capped grid, so kl stays fast.
  std::vector<float> g = gaussian(100000, 8);
  g.push_back(50.0f);
  Range fine = range_kl(histogram_of(g, 1 << 16));
  CHECK(fine.max < 10.0f);
  CHECK(fine.max > 2.0f);
  // Fewer bins than quantized levels: kl cannot search and returns minmax.
  Histogram coarse = histogram_of(gaussian(1000, 2), 64);
  Range kl = range_kl(coarse);
  CHECK(kl.min == static_cast<float>(coarse.min()));
  CHECK(kl.max == static_cast<float>(coarse.max()));
}

TEST_CASE("range: range_by_name", "[calib][range]") {
  Histogram h = histogram_of(gaussian(100000, 3));
  auto p = range_by_name(h, "percentile:99.9");
  REQUIRE(p.has_value());
  CHECK(p->max == range_percentile(h, 99.9).max);
  auto d = range_by_name(h, "percentile");
  REQUIRE(d.has_value());
  CHECK(d->max == range_percentile(h, 99.999).max);
  CHECK(range_by_name(h, "mse").has_value());
  CHECK(range_by_name(h, "kl")->max == range_kl(h).max);
  CHECK(range_by_name(h, "minmax")->max == static_cast<float>(h.max()));

  auto unknown = range_by_name(h, "entropy");
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.status().code() == StatusCode::kBadInput);
  CHECK(unknown.status().message() ==
        "unknown calibration method 'entropy' (valid: minmax, percentile, percentile:P, kl, mse)");
  for (const char* bad : {"percentile:", "percentile:abc", "percentile:30", "percentile:101", "percentile:99.9x"}) {
    INFO(bad);
    auto r = range_by_name(h, bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.status().message().find("50 < P <= 100") != std::string::npos);
  }
}
