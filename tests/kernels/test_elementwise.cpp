#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/shape_util.h"
#include "libquant/kernels/unary.h"

using quant::kernels::binary_broadcast;
using quant::kernels::BinaryOp;
using quant::kernels::Dims;

TEST_CASE("binary_broadcast [2,1,3] + [4,1]", "[kernels][elementwise]") {
  const std::vector<float> a = {0, 1, 2, 3, 4, 5};  // a[i][0][k] = 3i + k
  const std::vector<float> b = {10, 20, 30, 40};    // b[j][0]
  std::vector<float> y(24, -1.0f);
  binary_broadcast(BinaryOp::Add, a.data(), Dims{2, 1, 3}, b.data(), Dims{4, 1}, y.data(), Dims{2, 4, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) CHECK(y[(i * 4 + j) * 3 + k] == float(3 * i + k + 10 * (j + 1)));
  CHECK(y[(1 * 4 + 2) * 3 + 0] == 33.0f);
  CHECK(y[23] == 45.0f);
}

TEST_CASE("binary_broadcast both sides broadcast and middle dims", "[kernels][elementwise]") {
  SECTION("outer product [3,1] * [1,4]") {
    const std::vector<float> a = {1, 2, 3}, b = {1, 10, 100, 1000};
    std::vector<float> y(12);
    binary_broadcast(BinaryOp::Mul, a.data(), Dims{3, 1}, b.data(), Dims{1, 4}, y.data(), Dims{3, 4});
    CHECK(y == std::vector<float>{1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000});
  }
  SECTION("[2,3,2] - [3,1]") {
    std::vector<float> a(12);
    for (int i = 0; i < 12; ++i) a[i] = float(i);
    const std::vector<float> b = {100, 200, 300};
    std::vector<float> y(12);
    binary_broadcast(BinaryOp::Sub, a.data(), Dims{2, 3, 2}, b.data(), Dims{3, 1}, y.data(), Dims{2, 3, 2});
    CHECK(y == std::vector<float>{-100, -99, -198, -197, -296, -295, -94, -93, -192, -191, -290, -289});
  }
  SECTION("channel bias [1,2,2,2] + [2,1,1]") {
    const std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {0.5, -0.5};
    std::vector<double> y(8);
    binary_broadcast(BinaryOp::Add, a.data(), Dims{1, 2, 2, 2}, b.data(), Dims{2, 1, 1}, y.data(), Dims{1, 2, 2, 2});
    CHECK(y == std::vector<double>{1.5, 2.5, 3.5, 4.5, 4.5, 5.5, 6.5, 7.5});
  }
}

TEST_CASE("binary_broadcast fast paths", "[kernels][elementwise]") {
  const std::vector<float> v = {2, 4, -8};
  const float one = 1.0f;
  std::vector<float> y(3);
  binary_broadcast(BinaryOp::Div, &one, Dims{}, v.data(), Dims{3}, y.data(), Dims{3});
  CHECK(y == std::vector<float>{0.5f, 0.25f, -0.125f});
  binary_broadcast(BinaryOp::Div, v.data(), Dims{3}, &one, Dims{1, 1}, y.data(), Dims{1, 3});
  CHECK(y == v);
  binary_broadcast(BinaryOp::Mul, v.data(), Dims{3}, v.data(), Dims{3}, y.data(), Dims{3});
  CHECK(y == std::vector<float>{4, 16, 64});
  // In place on the full-shape operand.
  binary_broadcast(BinaryOp::Sub, y.data(), Dims{3}, &one, Dims{}, y.data(), Dims{3});
  CHECK(y == std::vector<float>{3, 15, 63});
  // Scalar op scalar.
  float s = 0;
  const float two = 2.0f;
  binary_broadcast(BinaryOp::Add, &one, Dims{}, &two, Dims{}, &s, Dims{});
  CHECK(s == 3.0f);
  // Empty output writes nothing.
  binary_broadcast(BinaryOp::Add, v.data(), Dims{0, 3}, v.data(), Dims{3}, y.data(), Dims{0, 3});
  CHECK(y == std::vector<float>{3, 15, 63});
}

TEST_CASE("integer binary ops: truncating division and defined edge cases", "[kernels][elementwise]") {
  const std::vector<int32_t> a = {-7, 7, -7, 7, 5, std::numeric_limits<int32_t>::min()};
  const std::vector<int32_t> b = {2, 2, -2, -2, 0, -1};
  std::vector<int32_t> y(6);
  binary_broadcast(BinaryOp::Div, a.data(), Dims{6}, b.data(), Dims{6}, y.data(), Dims{6});
  CHECK(y == std::vector<int32_t>{-3, 3, 3, -3, 0, std::numeric_limits<int32_t>::min()});

  const std::vector<int64_t> big = {std::numeric_limits<int64_t>::max(), -3};
  const int64_t one = 1;
  std::vector<int64_t> y64(2);
  binary_broadcast(BinaryOp::Add, big.data(), Dims{2}, &one, Dims{1}, y64.data(), Dims{2});
  CHECK(y64 == std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -2});
  const std::vector<int64_t> m = {2, 3};
  std::vector<int64_t> y4(4);
  binary_broadcast(BinaryOp::Mul, m.data(), Dims{2, 1}, m.data(), Dims{2}, y4.data(), Dims{2, 2});
  CHECK(y4 == std::vector<int64_t>{4, 6, 6, 9});
}

TEST_CASE("relu, clip, sigmoid", "[kernels][elementwise]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  SECTION("relu") {
    const std::vector<float> x = {-1.5f, 0.0f, 2.0f, nan, -inf};
    std::vector<float> y(5);
    quant::kernels::relu_f32(x.data(), y.data(), 5);
    CHECK(y[0] == 0.0f);
    CHECK(y[1] == 0.0f);
    CHECK(y[2] == 2.0f);
    CHECK(std::isnan(y[3]));
    CHECK(y[4] == 0.0f);
  }
  SECTION("clip") {
    const std::vector<float> x = {-3.0f, -0.5f, 0.5f, 6.5f, nan};
    std::vector<float> y(5);
    quant::kernels::clip_f32(x.data(), y.data(), 5, -1.0f, 6.0f);
    CHECK(y[0] == -1.0f);
    CHECK(y[1] == -0.5f);
    CHECK(y[2] == 0.5f);
    CHECK(y[3] == 6.0f);
    CHECK(std::isnan(y[4]));
    // Clip opset 13: min > max makes every output max.
    quant::kernels::clip_f32(x.data(), y.data(), 4, 2.0f, 1.0f);
    CHECK(std::vector<float>(y.begin(), y.begin() + 4) == std::vector<float>{1, 1, 1, 1});
  }
  SECTION("the reference sigmoid (std::exp) is stable for large |x|") {
    const std::vector<float> x = {0.0f, 1.0f, -1.0f, 100.0f, -100.0f, 1000.0f, -1000.0f, inf, -inf};
    std::vector<float> y(x.size());
    quant::kernels::unary<float>(quant::kernels::UnaryOp::Sigmoid, x.data(), y.data(), int64_t(x.size()));
    CHECK(y[0] == 0.5f);
    CHECK(y[1] == Approx(0.7310585786f).epsilon(1e-6));
    CHECK(y[2] == Approx(0.2689414214f).epsilon(1e-6));
    CHECK(y[3] == 1.0f);
    CHECK(y[4] >= 0.0f);
    CHECK(y[4] < 1e-40f);
    CHECK(y[5] == 1.0f);
    CHECK(y[6] == 0.0f);
    CHECK(y[7] == 1.0f);
    CHECK(y[8] == 0.0f);
    for (float v : y) CHECK_FALSE(std::isnan(v));
  }
}

TEST_CASE("Mod, FMod, Min, Max, bit and logic ops per element type", "[kernels][elementwise]") {
  using quant::kernels::BinaryOp;
  const std::vector<int8_t> a = {-7, 7, -7, 7, -128, 5};
  const std::vector<int8_t> b = {3, -3, -3, 3, -1, 0};
  std::vector<int8_t> y(6);
  binary_broadcast(BinaryOp::Mod, a.data(), Dims{6}, b.data(), Dims{6}, y.data(), Dims{6});
  CHECK(y == std::vector<int8_t>{2, -2, -1, 1, 0, 0});  // divisor's sign; INT_MIN % -1 and x % 0 defined as 0
  binary_broadcast(BinaryOp::FMod, a.data(), Dims{6}, b.data(), Dims{6}, y.data(), Dims{6});
  CHECK(y == std::vector<int8_t>{-1, 1, -1, 1, 0, 0});
  binary_broadcast(BinaryOp::Div, a.data(), Dims{6}, b.data(), Dims{6}, y.data(), Dims{6});
  CHECK(y == std::vector<int8_t>{-2, -2, 2, 2, -128, 0});
  binary_broadcast(BinaryOp::Min, a.data(), Dims{6}, b.data(), Dims{6}, y.data(), Dims{6});
  CHECK(y == std::vector<int8_t>{-7, -3, -7, 3, -128, 0});

  const std::vector<uint32_t> u = {7, 0xFFFFFFFFu};
  std::vector<uint32_t> uy(2);
  const uint32_t three = 3;
  binary_broadcast(BinaryOp::Div, u.data(), Dims{2}, &three, Dims{}, uy.data(), Dims{2});  // no signed -1 trap
  CHECK(uy == std::vector<uint32_t>{2, 0x55555555u});
  const uint32_t all = 0xFFFFFFFFu;
  binary_broadcast(BinaryOp::Div, u.data(), Dims{2}, &all, Dims{}, uy.data(), Dims{2});
  CHECK(uy == std::vector<uint32_t>{0, 1});
  const std::vector<uint32_t> shifts = {31, 32};
  binary_broadcast(BinaryOp::BitShiftLeft, u.data(), Dims{1, 2}, shifts.data(), Dims{2}, uy.data(), Dims{1, 2});
  CHECK(uy == std::vector<uint32_t>{0x80000000u, 0});

  const std::vector<double> fa = {-5.5, 5.5, std::nan("")}, fb = {2, -2, 1};
  std::vector<double> fy(3);
  binary_broadcast(BinaryOp::FMod, fa.data(), Dims{3}, fb.data(), Dims{3}, fy.data(), Dims{3});
  CHECK(fy[0] == -1.5);
  CHECK(fy[1] == 1.5);
  binary_broadcast(BinaryOp::Mod, fa.data(), Dims{3}, fb.data(), Dims{3}, fy.data(), Dims{3});
  CHECK(fy[0] == 0.5);
  CHECK(fy[1] == -0.5);
  binary_broadcast(BinaryOp::Max, fa.data(), Dims{3}, fb.data(), Dims{3}, fy.data(), Dims{3});
  CHECK(std::isnan(fy[2]));
  binary_broadcast(BinaryOp::Min, fb.data(), Dims{3}, fa.data(), Dims{3}, fy.data(), Dims{3});
  CHECK(std::isnan(fy[2]));

  const std::vector<uint8_t> p = {0, 1, 2, 0}, q = {0, 0, 1, 3};
  std::vector<uint8_t> by(4);
  binary_broadcast(BinaryOp::And, p.data(), Dims{4}, q.data(), Dims{4}, by.data(), Dims{4});
  CHECK(by == std::vector<uint8_t>{0, 0, 1, 0});  // any non-zero byte is true
  binary_broadcast(BinaryOp::Xor, p.data(), Dims{4}, q.data(), Dims{4}, by.data(), Dims{4});
  CHECK(by == std::vector<uint8_t>{0, 1, 0, 1});
}

TEST_CASE("compare, pow and where kernels", "[kernels][elementwise]") {
  using quant::kernels::CompareOp;
  const std::vector<float> a = {1, 2, std::nanf("")};
  const float two = 2;
  std::vector<uint8_t> y(3);
  quant::kernels::compare_broadcast(CompareOp::LessOrEqual, a.data(), Dims{3}, &two, Dims{}, y.data(), Dims{3});
  CHECK(y == std::vector<uint8_t>{1, 1, 0});
  quant::kernels::compare_broadcast(CompareOp::GreaterOrEqual, a.data(), Dims{3}, &two, Dims{}, y.data(), Dims{3});
  CHECK(y == std::vector<uint8_t>{0, 1, 0});

  const std::vector<int32_t> base = {2, -3, 0, 7};
  const std::vector<int64_t> e = {10, 3, -1, 2};
  std::vector<int32_t> py(4);
  quant::kernels::pow_broadcast(base.data(), Dims{4}, e.data(), Dims{4}, py.data(), Dims{4});
  CHECK(py == std::vector<int32_t>{1024, -27, 0, 49});
  const std::vector<float> fe = {0.5f, 2.0f};
  std::vector<int32_t> py2(2);
  const int32_t nine = 9;
  quant::kernels::pow_broadcast(&nine, Dims{}, fe.data(), Dims{2}, py2.data(), Dims{2});
  CHECK(py2 == std::vector<int32_t>{3, 81});

  const std::vector<uint8_t> cond = {1, 0};
  const std::vector<uint64_t> x = {10, 20}, other = {7};
  std::vector<uint64_t> w(4);
  quant::kernels::where_broadcast(cond.data(), Dims{2, 1}, x.data(), Dims{2}, other.data(), Dims{1}, w.data(),
                                  Dims{2, 2}, sizeof(uint64_t));
  CHECK(w == std::vector<uint64_t>{10, 20, 7, 7});
}
