#include "libquant/calib/pair_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quant::calib {

std::pair<int8_t, int8_t> nearest_bounded_pair(double r0, double r1, int32_t bound) {
  const double a0 = std::abs(r0), a1 = std::abs(r1);
  // The nearest lattice point of the L1 ball lies on its boundary when the
  // rounded point is outside it; the boundary has at most 255 points.
  double best = std::numeric_limits<double>::infinity();
  int32_t best_u0 = 0, best_u1 = 0;
  for (int32_t u0 = std::max(0, bound - 127); u0 <= std::min(bound, 127); ++u0) {
    const int32_t u1 = bound - u0;
    const double e = (u0 - a0) * (u0 - a0) + (u1 - a1) * (u1 - a1);
    if (e < best) best = e, best_u0 = u0, best_u1 = u1;
  }
  // A pair already inside rounds as usual.
  const auto q0 = static_cast<int32_t>(std::nearbyint(a0)), q1 = static_cast<int32_t>(std::nearbyint(a1));
  if (q0 + q1 <= bound && q0 <= 127 && q1 <= 127) best_u0 = q0, best_u1 = q1;
  const auto t0 = static_cast<int8_t>(r0 < 0 ? -best_u0 : best_u0);
  const auto t1 = static_cast<int8_t>(r1 < 0 ? -best_u1 : best_u1);
  return {t0, t1};
}

}  // namespace quant::calib
