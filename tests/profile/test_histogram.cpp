#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "libquant/profile/histogram.h"

using quant::profile::Histogram;
using quant::profile::HistogramFields;

namespace {

void add(Histogram& h, std::vector<float> v) { h.add(v.data(), static_cast<int64_t>(v.size())); }

uint64_t total(const Histogram& h) { return std::accumulate(h.counts().begin(), h.counts().end(), uint64_t{0}); }

using Counts = std::vector<uint64_t>;

}  // namespace

TEST_CASE("histogram: exact statistics; NaN and Inf only counted", "[profile][histogram]") {
  Histogram h(16);
  CHECK(h.empty());
  CHECK(std::isnan(h.min()));
  CHECK(std::isnan(h.mean()));
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  add(h, {1.5f, nan, -2.0f, inf, 4.0f, -inf});
  add(h, {nan, 0.25f});
  CHECK(h.count() == 4);
  CHECK(h.nan_count() == 2);
  CHECK(h.inf_count() == 2);
  CHECK(h.min() == -2.0);
  CHECK(h.max() == 4.0);
  CHECK(h.sum() == 3.75);
  CHECK(h.mean() == 3.75 / 4);
  CHECK(total(h) == 4);
  CHECK(h.lo() <= h.min());
  CHECK(h.hi() >= h.max());

  Histogram only_nan(8);
  add(only_nan, {nan, inf});
  CHECK(only_nan.empty());
  CHECK(total(only_nan) == 0);
  CHECK(only_nan.nan_count() == 1);
}

TEST_CASE("histogram: the first values set the range", "[profile][histogram]") {
  Histogram h(8);
  add(h, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(h.lo() == 0);
  CHECK(h.hi() == 8);
  CHECK(h.bin_width() == 1);
  CHECK(h.counts() == Counts{1, 1, 1, 1, 1, 1, 1, 2});  // hi falls in the last bin

  SECTION("a zero-width start gets max(|v|,1) * 2^-20 on each side") {
    Histogram z(4);
    add(z, {3, 3});
    CHECK(z.lo() == 3 - std::ldexp(3.0, -20));
    CHECK(z.hi() == 3 + std::ldexp(3.0, -20));
    Histogram zero(4);
    add(zero, {0});
    CHECK(zero.hi() == std::ldexp(1.0, -20));
    CHECK(total(zero) == 1);
  }
}

TEST_CASE("histogram: growth doubles the width and merges bin pairs exactly", "[profile][histogram]") {
  Histogram h(8);
  add(h, {0, 1, 2, 3, 4, 5, 6, 7, 8});  // [0, 8]: {1,1,1,1,1,1,1,2}

  SECTION("upward, anchored at lo, several doublings at once") {
    add(h, {20});  // [0, 16] then [0, 32]: groups of 4 bins
    CHECK(h.lo() == 0);
    CHECK(h.hi() == 32);
    CHECK(h.counts() == Counts{4, 5, 0, 0, 0, 1, 0, 0});
  }
  SECTION("downward, anchored at hi") {
    add(h, {-3});  // [-8, 8]: pairs counted from the top
    CHECK(h.lo() == -8);
    CHECK(h.hi() == 8);
    CHECK(h.counts() == Counts{0, 0, 1, 0, 2, 2, 2, 3});
  }
  SECTION("both directions in one batch: upward first") {
    add(h, {9, -1});  // up: [0, 16] {2,2,2,3,0,0,0,0}; down: [-16, 16] {0,0,0,0,4,5,0,0}
    CHECK(h.lo() == -16);
    CHECK(h.hi() == 16);
    CHECK(h.counts() == Counts{0, 0, 0, 1, 4, 5, 1, 0});  // then -1 -> bin 3, 9 -> bin 6
  }
  SECTION("one growth at a time equals several at once") {
    Histogram g = h;
    add(h, {9});
    add(h, {20});
    add(g, {20});
    add(g, {9});
    CHECK(h.counts() == g.counts());
    CHECK(h.hi() == g.hi());
  }
  CHECK(total(h) == h.count());
  CHECK(h.counts().size() == 8);
}

TEST_CASE("histogram: memory stays constant and counts are never lost", "[profile][histogram]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  Histogram h(64);
  uint64_t n = 0;
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<float> v(100);
    float spread = 1.0f + static_cast<float>(batch);  // keeps forcing growth
    for (float& x : v) x = normal(rng) * spread;
    h.add(v.data(), 100);
    n += 100;
    REQUIRE(total(h) == n);
    REQUIRE(h.counts().size() == 64);
    REQUIRE(h.lo() <= h.min());
    REQUIRE(h.hi() >= h.max());
  }
  // Tiny and huge magnitudes together stay finite.
  Histogram wide(32);
  add(wide, {1e-30f, 2e-30f});
  add(wide, {3e38f, -3e38f});
  CHECK(std::isfinite(wide.lo()));
  CHECK(std::isfinite(wide.hi()));
  CHECK(total(wide) == 4);
}

TEST_CASE("histogram: merge", "[profile][histogram]") {
  Histogram a(8), b(8);
  add(a, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  add(b, {0, 8, 0.5f, std::numeric_limits<float>::quiet_NaN()});

  SECTION("identical grids add exactly") {
    Histogram m = Histogram::merge(a, b);
    CHECK(m.counts() == Counts{3, 1, 1, 1, 1, 1, 1, 3});
    CHECK(m.count() == 12);
    CHECK(m.nan_count() == 1);
    CHECK(m.sum() == a.sum() + b.sum());
  }
  SECTION("a wider range is spread proportionally and the total is exact") {
    Histogram c(8);
    add(c, {-8, 8});  // [-8, 8], width 2
    Histogram m = Histogram::merge(a, c);
    CHECK(m.lo() == -8);
    CHECK(m.hi() == 8);
    // a's unit bins fold pairwise into the upper half; c sits in the edge bins.
    CHECK(m.counts() == Counts{1, 0, 0, 0, 2, 2, 2, 4});
    CHECK(m.min() == -8);
    CHECK(m.max() == 8);
  }
  SECTION("misaligned grids: counts split by overlap, total preserved") {
    Histogram c(4);
    add(c, {1, 2, 3, 4, 5});  // [1, 5], width 1
    Histogram m = Histogram::merge(a, c);
    CHECK(m.count() == a.count() + c.count());
    CHECK(total(m) == m.count());
    CHECK(m.bins() == 8);
  }
  SECTION("with an empty histogram") {
    Histogram m = Histogram::merge(Histogram(8), a);
    CHECK(m.counts() == a.counts());
    CHECK(m.lo() == a.lo());
    CHECK(m.min() == a.min());
    CHECK(Histogram::merge(Histogram(8), Histogram(8)).empty());
  }
  SECTION("many random shards keep the total") {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-5, 5);
    Histogram acc(100);
    uint64_t n = 0;
    for (int s = 0; s < 20; ++s) {
      Histogram shard(100);
      std::vector<float> v(static_cast<size_t>(50 + s));
      for (float& x : v) x = u(rng) * static_cast<float>(s + 1);
      shard.add(v.data(), static_cast<int64_t>(v.size()));
      n += v.size();
      acc = Histogram::merge(acc, shard);
      REQUIRE(total(acc) == n);
    }
  }
}

TEST_CASE("histogram: from_fields validates and round-trips", "[profile][histogram]") {
  Histogram h(8);
  add(h, {-1, 0.3f, 2.5f, std::numeric_limits<float>::infinity()});
  auto back = Histogram::from_fields(h.fields());
  REQUIRE(back.has_value());
  CHECK(back->counts() == h.counts());
  CHECK(back->lo() == h.lo());
  CHECK(back->hi() == h.hi());
  CHECK(back->sum() == h.sum());
  CHECK(back->inf_count() == 1);
  CHECK(back->count() == 3);

  auto refuse = [](HistogramFields f, const std::string& needle) {
    auto r = Histogram::from_fields(std::move(f));
    REQUIRE_FALSE(r.has_value());
    INFO(r.status().message());
    CHECK(r.status().message().find(needle) != std::string::npos);
  };
  HistogramFields f = h.fields();
  HistogramFields swapped = f;
  std::swap(swapped.lo, swapped.hi);
  refuse(swapped, "histogram.lo");
  HistogramFields outside = f;
  outside.min = -100;
  refuse(outside, "outside");
  HistogramFields no_bins = f;
  no_bins.counts.clear();
  refuse(no_bins, "histogram.counts");
  HistogramFields no_min = f;
  no_min.min = std::numeric_limits<double>::quiet_NaN();
  refuse(no_min, "min/max");

  HistogramFields empty;
  empty.counts.assign(4, 0);
  auto e = Histogram::from_fields(empty);
  REQUIRE(e.has_value());
  CHECK(e->empty());
}
