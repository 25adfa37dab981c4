// The median of a benchmark's timings, shared by the programs in bench/:
// the middle value, or the mean of the two middle ones; 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace qtool_bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace qtool_bench
