#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "libquant/kernels/batchnorm.h"

TEST_CASE("batchnorm_f32 inference", "[kernels][batchnorm]") {
  // N=2, C=2, spatial=2.
  const std::vector<float> x = {1, 2, 3, 4, 5, 9, 1, -1};
  const std::vector<float> scale = {1, 2}, bias = {0, 1}, mean = {1, 3}, var = {3, 0.25f};
  std::vector<float> y(8);
  // epsilon 1 makes the channel-0 std exactly 2; channel 1: sqrt(1.25).
  quant::kernels::batchnorm_f32(x.data(), 2, 2, 2, scale.data(), bias.data(), mean.data(), var.data(), 1.0f, y.data());
  CHECK(y[0] == 0.0f);  // (1 - 1) / 2
  CHECK(y[1] == 0.5f);  // (2 - 1) / 2
  CHECK(y[4] == 2.0f);  // (5 - 1) / 2
  CHECK(y[5] == 4.0f);  // (9 - 1) / 2
  const double s1 = 2.0 / std::sqrt(1.25);
  CHECK(y[2] == Approx(0 * s1 + 1));
  CHECK(y[3] == Approx(1 * s1 + 1));
  CHECK(y[6] == Approx(-2 * s1 + 1));
  CHECK(y[7] == Approx(-4 * s1 + 1));

  // epsilon 0, exact arithmetic, in place.
  std::vector<float> z = {1, 2, 3, 4};
  const std::vector<float> var4 = {4, 0.25f};
  quant::kernels::batchnorm_f32(z.data(), 1, 2, 2, scale.data(), bias.data(), mean.data(), var4.data(), 0.0f, z.data());
  CHECK(z == std::vector<float>{0, 0.5f, 1, 5});
}
