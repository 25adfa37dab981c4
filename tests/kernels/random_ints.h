// Test data for the kernel tests: integers uniform over T's whole range, floats
// uniform over [-1, 1].
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

inline std::vector<float> random_floats(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace quant::testing
