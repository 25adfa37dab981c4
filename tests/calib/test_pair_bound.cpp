#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

#include "libquant/calib/pair_bound.h"

using quant::calib::nearest_bounded_pair;

namespace {

// The nearest pair by brute force over every int8 pair inside the bound.
double best_error(double r0, double r1, int bound) {
  double best = 1e30;
  for (int t0 = -127; t0 <= 127; ++t0)
    for (int t1 = -127; t1 <= 127; ++t1)
      if (std::abs(t0) + std::abs(t1) <= bound) best = std::min(best, (t0 - r0) * (t0 - r0) + (t1 - r1) * (t1 - r1));
  return best;
}

}  // namespace

TEST_CASE("nearest_bounded_pair keeps |t0| + |t1| <= bound and is the nearest such pair", "[calib][pair_bound]") {
  const double cases[][2] = {{127, 127}, {127, -100}, {-90.4, 60.2}, {64.6, 63.6}, {-127, 1.4}, {0.2, -127}, {100, 100}};
  for (const auto& c : cases) {
    auto [t0, t1] = nearest_bounded_pair(c[0], c[1], 128);
    CHECK(std::abs(t0) + std::abs(t1) <= 128);
    const double e = (t0 - c[0]) * (t0 - c[0]) + (t1 - c[1]) * (t1 - c[1]);
    CHECK(e == Approx(best_error(c[0], c[1], 128)));
    CHECK((t0 == 0 || (t0 < 0) == (c[0] < 0)));
    CHECK((t1 == 0 || (t1 < 0) == (c[1] < 0)));
  }
}

TEST_CASE("nearest_bounded_pair rounds pairs already inside the bound as usual", "[calib][pair_bound]") {
  auto [t0, t1] = nearest_bounded_pair(60.4, -67.6, 128);
  CHECK(t0 == 60);
  CHECK(t1 == -68);
}
