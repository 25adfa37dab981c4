// Integer test data for the kernel tests: uniform over T's whole range.
#pragma once

#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace quant::testing {

template <class T>
std::vector<T> random_values(std::mt19937& rng, size_t count) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

}  // namespace quant::testing
