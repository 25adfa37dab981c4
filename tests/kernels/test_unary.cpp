// Unary kernels: float, double and the integer paths.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "libquant/kernels/unary.h"

using quant::kernels::unary;
using quant::kernels::UnaryOp;

TEST_CASE("unary math follows the spec's edge cases", "[kernels][unary]") {
  const std::vector<double> x = {-2.5, -0.5, 0.5, 1.5, 2.5, std::nan("")};
  std::vector<double> y(x.size());
  unary(UnaryOp::Round, x.data(), y.data(), 6);
  CHECK(std::vector<double>(y.begin(), y.begin() + 5) == std::vector<double>{-2, -0.0, 0, 2, 2});
  CHECK(std::isnan(y[5]));
  unary(UnaryOp::Sign, x.data(), y.data(), 6);
  CHECK(y == std::vector<double>{-1, -1, 1, 1, 1, 0});  // Sign(NaN) = 0, as ONNX Runtime
  unary(UnaryOp::Relu, x.data(), y.data(), 6);
  CHECK(std::isnan(y[5]));
  const std::vector<float> big = {-1000, 1000, 0};
  std::vector<float> fy(3);
  unary(UnaryOp::Softplus, big.data(), fy.data(), 3);
  CHECK(fy[0] == 0.0f);
  CHECK(fy[1] == 1000.0f);
  CHECK(fy[2] == Approx(std::log(2.0f)));
  unary(UnaryOp::Sigmoid, big.data(), fy.data(), 3);
  CHECK(fy == std::vector<float>{0, 1, 0.5f});
  unary(UnaryOp::Mish, big.data(), fy.data(), 3);
  CHECK(fy[1] == 1000.0f);
  CHECK(fy[0] == 0.0f);
}

TEST_CASE("unary integer paths are exact or truncate", "[kernels][unary]") {
  const std::vector<int16_t> x = {-32768, -3, 0, 4};
  std::vector<int16_t> y(4);
  unary(UnaryOp::Abs, x.data(), y.data(), 4);
  CHECK(y == std::vector<int16_t>{-32768, 3, 0, 4});
  unary(UnaryOp::Neg, x.data(), y.data(), 4);
  CHECK(y == std::vector<int16_t>{-32768, 3, 0, -4});
  unary(UnaryOp::Sign, x.data(), y.data(), 4);
  CHECK(y == std::vector<int16_t>{-1, -1, 0, 1});
  unary(UnaryOp::Erf, x.data(), y.data(), 4);  // |erf| < 1 truncates to 0; erf(-32768) is -1.0 in double
  CHECK(y == std::vector<int16_t>{-1, 0, 0, 0});
  const std::vector<uint8_t> u = {0, 200};
  std::vector<uint8_t> uy(2);
  unary(UnaryOp::Neg, u.data(), uy.data(), 2);
  CHECK(uy == std::vector<uint8_t>{0, 56});
}

TEST_CASE("clip, is_nan, is_inf, logical_not", "[kernels][unary]") {
  const std::vector<uint64_t> x = {0, 5, ~0ull};
  std::vector<uint64_t> y(3);
  quant::kernels::clip<uint64_t>(x.data(), y.data(), 3, 1, 6);
  CHECK(y == std::vector<uint64_t>{1, 5, 6});
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f = {-inf, inf, std::nanf(""), 0};
  std::vector<uint8_t> b(4);
  quant::kernels::is_nan(f.data(), b.data(), 4);
  CHECK(b == std::vector<uint8_t>{0, 0, 1, 0});
  quant::kernels::is_inf(f.data(), b.data(), 4, false, true);
  CHECK(b == std::vector<uint8_t>{0, 1, 0, 0});
  quant::kernels::logical_not(std::vector<uint8_t>{0, 1, 7}.data(), b.data(), 3);
  CHECK(std::vector<uint8_t>(b.begin(), b.begin() + 3) == std::vector<uint8_t>{1, 0, 0});
}
