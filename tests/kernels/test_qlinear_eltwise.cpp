#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/lookup_table.h"
#include "libquant/kernels/qlinear_eltwise.h"

using namespace quant::kernels;

namespace {

template <class T>
T saturate(double v) {
  return static_cast<T>(std::fmin(std::fmax(v, std::numeric_limits<T>::min()), std::numeric_limits<T>::max()));
}

// ONNX Runtime's x86 formulas (qladd_avx2.cpp, qlmul.cpp), written out per element.
template <class T>
T naive_add(T a, T b, bool scalar_b, const QLinearBinaryParams& p) {
  const float ra = p.a_scale / p.c_scale, rb = p.b_scale / p.c_scale;
  const float za = static_cast<float>(p.a_zero_point), zb = static_cast<float>(p.b_zero_point);
  const float base = static_cast<float>(p.c_zero_point) - (ra * za + rb * zb);
  float v;
  if (scalar_b) {
    const float fixed = base + static_cast<float>(b) * rb;
    v = std::fma(static_cast<float>(a), ra, fixed);
  } else {
    v = std::fma(static_cast<float>(a), ra, std::fma(static_cast<float>(b), rb, base));
  }
  return saturate<T>(std::nearbyint(v));
}

template <class T>
T naive_mul(T a, T b, const QLinearBinaryParams& p) {
  const float r = p.a_scale * p.b_scale / p.c_scale;
  const int32_t prod = (int32_t{a} - p.a_zero_point) * (int32_t{b} - p.b_zero_point);
  return saturate<T>(std::nearbyint(static_cast<float>(prod) * r + static_cast<float>(p.c_zero_point)));
}

// The real-valued result, rounded once.
template <class T>
double exact(double real, const QLinearBinaryParams& p) {
  return std::nearbyint(real / p.c_scale) + p.c_zero_point;
}

template <class T>
void sweep_binary() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> sd(0.002f, 0.2f);
  std::uniform_int_distribution<int> vd(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  const int lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int trial = 0; trial < 40; ++trial) {
    QLinearBinaryParams p;
    p.a_scale = sd(rng), p.b_scale = sd(rng), p.c_scale = sd(rng);
    const int zps[] = {lo, hi, 0, vd(rng)};
    p.a_zero_point = zps[trial % 4], p.b_zero_point = zps[(trial / 4) % 4], p.c_zero_point = vd(rng);
    const int64_t n = 1 + trial * 7;
    std::vector<T> a(static_cast<size_t>(n)), b(static_cast<size_t>(n)), c(static_cast<size_t>(n));
    for (auto& v : a) v = static_cast<T>(vd(rng));
    for (auto& v : b) v = static_cast<T>(vd(rng));
    for (bool scalar_b : {false, true}) {
      qlinear_add<T>(a.data(), b.data(), scalar_b, c.data(), n, p);
      for (int64_t i = 0; i < n; ++i) {
        const T bv = b[scalar_b ? 0 : static_cast<size_t>(i)];
        REQUIRE(c[i] == naive_add<T>(a[i], bv, scalar_b, p));
        const double real = p.a_scale * (a[i] - p.a_zero_point) + p.b_scale * (bv - p.b_zero_point);
        REQUIRE(std::fabs(c[i] - saturate<T>(exact<T>(real, p))) <= 1);
      }
      qlinear_mul<T>(a.data(), b.data(), scalar_b, c.data(), n, p);
      for (int64_t i = 0; i < n; ++i) {
        const T bv = b[scalar_b ? 0 : static_cast<size_t>(i)];
        REQUIRE(c[i] == naive_mul<T>(a[i], bv, p));
        const double real = double(p.a_scale) * (a[i] - p.a_zero_point) * p.b_scale * (bv - p.b_zero_point);
        REQUIRE(std::fabs(c[i] - saturate<T>(exact<T>(real, p))) <= 1);
      }
    }
  }
}

}  // namespace

TEST_CASE("qlinear_add / qlinear_mul uint8 match ONNX Runtime's formulas", "[kernels][qlinear_eltwise]") {
  sweep_binary<uint8_t>();
}
TEST_CASE("qlinear_add / qlinear_mul int8 match ONNX Runtime's formulas", "[kernels][qlinear_eltwise]") {
  sweep_binary<int8_t>();
}

TEST_CASE("qlinear_add by hand", "[kernels][qlinear_eltwise]") {
  // 0.5 * (10 - 4) + 0.25 * (8 - 0) = 5 -> 5 / 1 + 100 = 105; saturation at both ends.
  QLinearBinaryParams p{0.5f, 0.25f, 1.0f, 4, 0, 100};
  const std::vector<uint8_t> a = {10, 255, 0}, b = {8, 255, 0};
  std::vector<uint8_t> c(3);
  qlinear_add<uint8_t>(a.data(), b.data(), false, c.data(), 3, p);
  CHECK(c == std::vector<uint8_t>{105, 255, 98});
  qlinear_mul<uint8_t>(a.data(), b.data(), false, c.data(), 3, p);
  // 0.5 * 0.25 * 6 * 8 = 6 -> 106; 0.125 * 251 * 255 -> saturates; 0.125 * -4 * 0 = 0 -> 100.
  CHECK(c == std::vector<uint8_t>{106, 255, 100});
}

TEST_CASE("lookup tables gather f(dequantize(x)) requantized", "[kernels][lookup_table]") {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> sd(0.01f, 0.1f);
  for (int trial = 0; trial < 20; ++trial) {
    const float xs = sd(rng), ys = 1.0f / 256;
    const int8_t xz = static_cast<int8_t>(trial * 13 - 128);
    const int8_t yz = -128;
    float in[256], out[256];
    int8_t table[256];
    lookup_table_inputs<int8_t>(xs, xz, in);
    logistic_mlas(in, out, 256);
    lookup_table_from_outputs<int8_t>(out, ys, yz, table);
    std::vector<int8_t> x(256), y(256);
    for (int i = 0; i < 256; ++i) x[static_cast<size_t>(i)] = static_cast<int8_t>(i - 128);
    apply_lookup_table<int8_t>(x.data(), table, y.data(), 256);
    for (int i = 0; i < 256; ++i) {
      const float real = xs * static_cast<float>(x[static_cast<size_t>(i)] - xz);
      // The byte pattern of x indexes the table; the entry is the quantized sigmoid.
      REQUIRE(in[static_cast<uint8_t>(x[static_cast<size_t>(i)])] == real);
      const double want = std::nearbyint((1.0 / (1.0 + std::exp(-double(real)))) / ys) + yz;
      REQUIRE(std::fabs(y[static_cast<size_t>(i)] - saturate<int8_t>(want)) <= 1);
    }
  }
}

TEST_CASE("logistic_mlas approximates the logistic function", "[kernels][lookup_table]") {
  std::vector<float> x, y;
  for (float v = -30.0f; v <= 30.0f; v += 0.0137f) x.push_back(v);
  y.resize(x.size());
  logistic_mlas(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    REQUIRE(y[i] >= 0.0f);
    REQUIRE(y[i] <= 1.0f);
    REQUIRE(std::fabs(y[i] - 1.0 / (1.0 + std::exp(-double(x[i])))) < 2e-6);
  }
  float v = 0.0f, out = 0.0f;
  logistic_mlas(&v, &out, 1);
  CHECK(out == 0.5f);
}

TEST_CASE("leaky_relu_values", "[kernels][lookup_table]") {
  const std::vector<float> x = {-2.0f, -0.0f, 0.0f, 3.0f};
  std::vector<float> y(4);
  leaky_relu_values(x.data(), y.data(), 4, 0.1f);
  CHECK(y == std::vector<float>{-0.2f, -0.0f, 0.0f, 3.0f});
}
