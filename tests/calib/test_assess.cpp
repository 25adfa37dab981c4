#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "libquant/calib/assess.h"

using namespace quant;
using namespace quant::calib;
using quant::profile::Histogram;

namespace {

Histogram uniform01(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back((static_cast<float>(i) + 0.5f) / static_cast<float>(n));
  Histogram h(2048);
  h.add(v.data(), static_cast<int64_t>(v.size()));
  return h;
}

}  // namespace

TEST_CASE("assess: uniform data over its full range has the textbook 8-bit SQNR", "[calib][assess]") {
  Histogram h = uniform01(100000);
  RangeCost c = assess_range(h, {0, 1});
  CHECK(c.clipped_share == 0);
  // Signal E[x^2] = 1/3, noise step^2/12 with step 1/255: SQNR = 10 log10(4 * 255^2).
  CHECK(c.sqnr_db == Approx(10 * std::log10(4.0 * 255 * 255)).margin(0.05));
  // Fewer levels: 6 dB per bit.
  CHECK(assess_range(h, {0, 1}, 16).sqnr_db == Approx(10 * std::log10(4.0 * 15 * 15)).margin(0.05));
}

TEST_CASE("assess: clipping counts the share outside and its squared error", "[calib][assess]") {
  Histogram h = uniform01(100000);
  RangeCost half = assess_range(h, {0, 0.5f});
  CHECK(half.clipped_share == Approx(0.5).margin(1e-3));
  // Clipping error dominates: E[(x - 0.5)^2; x > 0.5] = 1/24, signal 1/3 -> about 9 dB.
  CHECK(half.sqnr_db == Approx(10 * std::log10((1.0 / 3) / (1.0 / 24))).margin(0.1));
  RangeCost both = assess_range(h, {0.25f, 0.75f});
  CHECK(both.clipped_share == Approx(0.5).margin(1e-3));
}

TEST_CASE("assess: the mse range has the best estimated SQNR of the four methods", "[calib][assess]") {
  // Heavy tails: clipping them trades a little clipping error for a finer step.
  std::mt19937 rng(2);
  std::exponential_distribution<float> expo(1);
  std::vector<float> v(200000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 2 ? 1.f : -1.f) * expo(rng);
  Histogram h(2048);
  h.add(v.data(), static_cast<int64_t>(v.size()));
  auto methods = assess_methods(h);
  REQUIRE(methods.size() == 4);
  CHECK(methods[0].method == "minmax");
  CHECK(methods[0].cost.clipped_share == 0);
  CHECK(methods[3].method == "mse");
  CHECK(methods[3].cost.clipped_share > 0);
  // mse minimises (an estimate of) the same squared error that SQNR measures.
  for (size_t m = 0; m < 3; ++m) {
    INFO(methods[m].method << " " << methods[m].cost.sqnr_db << " dB vs mse " << methods[3].cost.sqnr_db);
    CHECK(methods[3].cost.sqnr_db >= methods[m].cost.sqnr_db - 0.2);
  }
  CHECK(methods[3].cost.sqnr_db > methods[0].cost.sqnr_db);
}

TEST_CASE("assess: degenerate histograms have no noise", "[calib][assess]") {
  Histogram empty(64);
  CHECK(std::isinf(assess_range(empty, {0, 0}).sqnr_db));
  Histogram zeros(64);
  std::vector<float> z(10, 0.0f);
  zeros.add(z.data(), 10);
  RangeCost c = assess_range(zeros, {0, 0});
  CHECK(std::isinf(c.sqnr_db));
  CHECK(c.clipped_share == 0);
}
