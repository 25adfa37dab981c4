#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "libquant/kernels/matmul.h"

using quant::kernels::Dims;
using quant::kernels::matmul_f32;
using quant::kernels::matmul_output_shape;

TEST_CASE("matmul_output_shape with 1-D promotion and batch broadcasting", "[kernels][matmul]") {
  CHECK(matmul_output_shape(Dims{3}, Dims{3}) == Dims{});
  CHECK(matmul_output_shape(Dims{2, 3}, Dims{3}) == Dims{2});
  CHECK(matmul_output_shape(Dims{3}, Dims{3, 4}) == Dims{4});
  CHECK(matmul_output_shape(Dims{3}, Dims{5, 3, 4}) == Dims{5, 4});
  CHECK(matmul_output_shape(Dims{5, 2, 3}, Dims{3}) == Dims{5, 2});
  CHECK(matmul_output_shape(Dims{5, 2, 3}, Dims{3, 4}) == Dims{5, 2, 4});
  CHECK(matmul_output_shape(Dims{2, 1, 2, 3}, Dims{3, 3, 4}) == Dims{2, 3, 2, 4});
  CHECK_FALSE(matmul_output_shape(Dims{2, 3}, Dims{4, 5}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{}, Dims{3}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{2, 2, 3}, Dims{3, 3, 4}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{3}, Dims{4}).has_value());
}

TEST_CASE("matmul_f32 1-D promotion", "[kernels][matmul]") {
  const std::vector<float> A = {1, 2, 3, 4, 5, 6};
  const std::vector<float> B = {7, 8, 9, 10, 11, 12};
  SECTION("vector . vector is a scalar") {
    const std::vector<float> u = {1, 2, 3}, v = {4, 5, 6};
    float y = 0;
    matmul_f32(u.data(), Dims{3}, v.data(), Dims{3}, &y);
    CHECK(y == 32.0f);
  }
  SECTION("matrix x vector") {
    const std::vector<float> v = {1, 0, -1};
    std::vector<float> y(2);
    matmul_f32(A.data(), Dims{2, 3}, v.data(), Dims{3}, y.data());
    CHECK(y == std::vector<float>{-2, -2});
  }
  SECTION("vector x matrix") {
    const std::vector<float> v = {1, 1, 1};
    std::vector<float> y(2);
    matmul_f32(v.data(), Dims{3}, B.data(), Dims{3, 2}, y.data());
    CHECK(y == std::vector<float>{27, 30});
  }
  SECTION("vector x batched matrix") {
    const std::vector<float> v = {1, 2};
    const std::vector<float> b = {1, 0, 0, 1, 2, 3, 4, 5};  // [2,2,2]
    std::vector<float> y(4);
    matmul_f32(v.data(), Dims{2}, b.data(), Dims{2, 2, 2}, y.data());
    CHECK(y == std::vector<float>{1, 2, 10, 13});
  }
}

TEST_CASE("matmul_f32 broadcasts batch dimensions", "[kernels][matmul]") {
  // A [2,1,2,2], B [3,2,2] -> Y [2,3,2,2]
  std::vector<float> A(8), B(12);
  for (int i = 0; i < 8; ++i) A[i] = float(i + 1);
  for (int i = 0; i < 12; ++i) B[i] = float((i % 5) - 2);
  std::vector<float> y(24, -100.0f);
  matmul_f32(A.data(), Dims{2, 1, 2, 2}, B.data(), Dims{3, 2, 2}, y.data());
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          float acc = 0;
          for (int k = 0; k < 2; ++k) acc += A[a * 4 + i * 2 + k] * B[b * 4 + k * 2 + j];
          CHECK(y[((a * 3 + b) * 2 + i) * 2 + j] == acc);
        }
      }
    }
  }
  // Hand check: batch (1, 2): A[1] = [5 6; 7 8], B[2] = [1 2; -2 -1] -> [-7 4; -9 6].
  CHECK(y[((1 * 3 + 2) * 2 + 0) * 2 + 0] == -7.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 0) * 2 + 1] == 4.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 1) * 2 + 0] == -9.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 1) * 2 + 1] == 6.0f);
}
