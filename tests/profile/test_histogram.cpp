#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <algorithm>
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

TEST_CASE("histogram: bins are power-of-two cells, the fewest that hold the data", "[profile][histogram]") {
  Histogram h(8);
  add(h, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  // Width 1 needs 9 cells (0..8), width 2 needs 5: e = 1, first cell 0.
  CHECK(h.on_lattice());
  CHECK(h.exponent() == 1);
  CHECK(h.lo() == 0);
  CHECK(h.hi() == 16);
  CHECK(h.bin_width() == 2);
  CHECK(h.counts() == Counts{2, 2, 2, 2, 1, 0, 0, 0});
  CHECK(h.bin_lower_edge(3) == 6);

  SECTION("a constant tensor gets cells of half a float32 ulp") {
    Histogram z(4);
    add(z, {3, 3});
    CHECK(z.exponent() == 1 - 24);
    CHECK(z.lo() == 3);
    CHECK(z.hi() == 3 + std::ldexp(4.0, -23));
    CHECK(z.counts() == Counts{2, 0, 0, 0});
    Histogram zero(4);
    add(zero, {0, -0.0f});
    CHECK(zero.exponent() == -150);
    CHECK(zero.lo() == 0);
    CHECK(total(zero) == 2);
  }
  SECTION("negative values: cells are floored, not truncated") {
    Histogram n(4);
    add(n, {-0.5f, -0.25f, 0.25f});
    // e = -2: cells -2, -1, 1 (width 0.25): four cells from -2 to 1.
    CHECK(n.exponent() == -2);
    CHECK(n.lo() == -0.5);
    CHECK(n.counts() == Counts{1, 1, 0, 1});
  }
}

TEST_CASE("histogram: growth merges whole cells and never splits a count", "[profile][histogram]") {
  Histogram h(8);
  add(h, {0, 1, 2, 3, 4, 5, 6, 7, 8});  // e = 1: {2,2,2,2,1,0,0,0}

  SECTION("upward: width 4, groups of two old bins") {
    add(h, {20});  // [0, 20] needs width 4: cells 0..5
    CHECK(h.lo() == 0);
    CHECK(h.hi() == 32);
    CHECK(h.counts() == Counts{4, 4, 1, 0, 0, 1, 0, 0});
  }
  SECTION("downward: the first cell moves, the width may stay") {
    add(h, {-3});  // [-3, 8] at width 2: cells -2..4, 7 of them
    CHECK(h.lo() == -4);
    CHECK(h.hi() == 12);
    CHECK(h.counts() == Counts{1, 0, 2, 2, 2, 2, 1, 0});
  }
  SECTION("one growth at a time equals all at once") {
    Histogram g(8);
    add(h, {9});
    add(h, {-20});
    add(h, {20});
    add(g, {20, -20, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(h.counts() == g.counts());
    CHECK(h.lo() == g.lo());
    CHECK(h.hi() == g.hi());
  }
  CHECK(total(h) == h.count());
  CHECK(h.counts().size() == 8);
}

TEST_CASE("histogram: the result depends on the values only, not their order or batching", "[profile][histogram]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.5f, 2.f);
  std::vector<float> v(5000);
  for (float& x : v) x = normal(rng);
  v[100] = 40.f;  // an outlier forces growth late or early depending on order
  Histogram whole(256);
  add(whole, v);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(v.begin(), v.end(), rng);
    Histogram h(256);
    size_t batch = 1 + static_cast<size_t>(trial) * 37;
    for (size_t i = 0; i < v.size(); i += batch)
      h.add(v.data() + i, static_cast<int64_t>(std::min(batch, v.size() - i)));
    REQUIRE(h.counts() == whole.counts());
    REQUIRE(h.lo() == whole.lo());
    REQUIRE(h.hi() == whole.hi());
    REQUIRE(h.min() == whole.min());
    REQUIRE(h.max() == whole.max());
    REQUIRE(h.sum() == Approx(whole.sum()));
  }
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

  SECTION("equals the histogram of all values together") {
    Histogram m = Histogram::merge(a, b);
    Histogram all(8);
    add(all, {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 8, 0.5f});
    CHECK(m.counts() == all.counts());
    CHECK(m.lo() == all.lo());
    CHECK(m.count() == 12);
    CHECK(m.nan_count() == 1);
    CHECK(m.sum() == a.sum() + b.sum());
  }
  SECTION("a wider shard coarsens the other exactly") {
    Histogram c(8);
    add(c, {-8, 8});
    Histogram m = Histogram::merge(a, c);
    Histogram all(8);
    add(all, {0, 1, 2, 3, 4, 5, 6, 7, 8, -8, 8});
    CHECK(m.counts() == all.counts());
    CHECK(m.min() == -8);
    CHECK(m.max() == 8);
  }
  SECTION("different bin counts: the result has the larger") {
    Histogram c(4);
    add(c, {1, 2, 3, 4, 5});
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
  SECTION("shards merge to the unsharded histogram, in any grouping and order") {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-5, 5);
    Histogram whole(100);
    std::vector<Histogram> shards;
    for (int s = 0; s < 6; ++s) {
      Histogram shard(100);
      std::vector<float> v(static_cast<size_t>(50 + s));
      for (float& x : v) x = u(rng) * static_cast<float>(s + 1);
      add(shard, v);
      add(whole, v);
      shards.push_back(shard);
    }
    Histogram left = shards[0], right = shards[5];
    for (int s = 1; s < 6; ++s) left = Histogram::merge(left, shards[static_cast<size_t>(s)]);
    for (int s = 4; s >= 0; --s) right = Histogram::merge(shards[static_cast<size_t>(s)], right);
    Histogram pairs = Histogram::merge(Histogram::merge(shards[0], shards[3]),
                                       Histogram::merge(Histogram::merge(shards[5], shards[1]),
                                                        Histogram::merge(shards[4], shards[2])));
    for (const Histogram* m : {&left, &right, &pairs}) {
      CHECK(m->counts() == whole.counts());
      CHECK(m->lo() == whole.lo());
      CHECK(m->hi() == whole.hi());
      CHECK(m->min() == whole.min());
      CHECK(m->max() == whole.max());
      CHECK(m->count() == whole.count());
    }
  }
  SECTION("a hand-written grid is brought onto the lattice, keeping its total") {
    HistogramFields f;
    f.lo = -1;
    f.hi = 2;
    f.counts = {3, 0, 5, 0};  // width 0.75: not a power of two
    f.min = -0.9;
    f.max = 1.9;
    f.sum = 4;
    auto odd = Histogram::from_fields(f);
    REQUIRE(odd.has_value());
    CHECK_FALSE(odd->on_lattice());
    Histogram m = Histogram::merge(*odd, a);
    CHECK(m.on_lattice());
    CHECK(m.count() == 8 + a.count());
    CHECK(total(m) == m.count());
    CHECK(m.min() == -0.9);
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
  CHECK(back->on_lattice());
  CHECK(back->exponent() == h.exponent());
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
