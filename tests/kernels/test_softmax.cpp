#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "libquant/kernels/softmax.h"

using quant::kernels::softmax_f32;

TEST_CASE("softmax_f32 basic and large values", "[kernels][softmax]") {
  const std::vector<float> expected = {0.09003057f, 0.24472847f, 0.66524096f};
  for (float offset : {0.0f, 1000.0f, -1000.0f, 80.0f}) {
    const std::vector<float> x = {1 + offset, 2 + offset, 3 + offset};
    std::vector<float> y(3);
    softmax_f32(x.data(), 1, 3, 1, y.data());
    INFO("offset " << offset);
    for (int i = 0; i < 3; ++i) CHECK(y[i] == Approx(expected[i]).epsilon(1e-5));
  }
  const std::vector<float> x = {-1000, 0, 1000};
  std::vector<float> y(3);
  softmax_f32(x.data(), 1, 3, 1, y.data());
  CHECK(y == std::vector<float>{0, 0, 1});
}

TEST_CASE("softmax_f32 over a middle axis and several rows", "[kernels][softmax]") {
  // Shape [2,3,2], axis 1: slices are x[o, :, j].
  std::vector<float> x = {1, 0, 2, 0, 3, 0,      // o = 0: column 0 = 1,2,3; column 1 = 0,0,0
                          5, 7, 5, 7, 5, 1000};  // o = 1: column 0 = 5,5,5; column 1 = 7,7,1000
  softmax_f32(x.data(), 2, 3, 2, x.data());      // in place
  CHECK(x[0] == Approx(0.09003057f));
  CHECK(x[2] == Approx(0.24472847f));
  CHECK(x[4] == Approx(0.66524096f));
  for (int i : {1, 3, 5, 6, 8, 10}) CHECK(x[i] == Approx(1.0 / 3));
  CHECK(x[7] == 0.0f);
  CHECK(x[9] == 0.0f);
  CHECK(x[11] == 1.0f);
}

TEST_CASE("softmax_f32 opset < 13 coerces to 2-D", "[kernels][softmax]") {
  // Shape [1,2,2] with axis 1 before opset 13: one row of 4 elements.
  const std::vector<float> x = {0, 0, 0, std::log(5.0f)};
  std::vector<float> y(4);
  softmax_f32(x.data(), 1, 4, 1, y.data());
  CHECK(y[0] == Approx(0.125));
  CHECK(y[3] == Approx(0.625));
}
