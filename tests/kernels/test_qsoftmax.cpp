#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "libquant/kernels/qsoftmax.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace quant::kernels;

namespace {

// ORT's float -> int32 and float -> uint32 casts as its x86-64 build executes
// them: cvttss2si to 32 bits, and to 64 bits truncated for the unsigned one.
// In C++ an out-of-range conversion (the +inf a short row gives) is undefined,
// so the instructions themselves are used where there are any.
int32_t cvtt_int(float r) {
#if defined(__x86_64__)
  return _mm_cvtt_ss2si(_mm_set_ss(r));
#else
  return (r >= -0x1p31f && r < 0x1p31f) ? static_cast<int32_t>(r) : std::numeric_limits<int32_t>::min();
#endif
}

uint32_t cvtt_uint(float r) {
#if defined(__x86_64__)
  return static_cast<uint32_t>(_mm_cvttss_si64(_mm_set_ss(r)));
#else
  return (r >= -0x1p63f && r < 0x1p63f) ? static_cast<uint32_t>(static_cast<int64_t>(r)) : 0u;
#endif
}

// ONNX Runtime 1.20's QlinearBuildLookupTableUint32 and QlinearSoftmaxCPU
// (contrib_ops/cpu/quantization/qlinear_softmax.cc), line by line, last axis.
template <class T>
std::vector<T> naive(const std::vector<T>& x, int64_t d, float x_scale, float y_scale, int32_t y_zp) {
  constexpr bool is_signed = std::is_same_v<T, int8_t>;
  // The unqualified log() there is C's double log of the float quotient.
  double bit_shift = std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<size_t>(d)));
  bit_shift = std::max(0.0, bit_shift - 5) / x_scale;
  float table[256];
  for (int32_t i = 0; i < 256; i++) {
    const double scaled_exp_xi = std::exp((static_cast<double>(i) - 255 + bit_shift) * static_cast<double>(x_scale));
    table[static_cast<uint8_t>(is_signed ? i - 128 : i)] = static_cast<float>(scaled_exp_xi);
  }
  const float Y_scale = std::floor(1.0F / y_scale);
  std::vector<T> y(x.size());
  for (size_t row = 0; row < x.size() / static_cast<size_t>(d); ++row) {
    const T* x_t = x.data() + row * static_cast<size_t>(d);
    T* y_t = y.data() + row * static_cast<size_t>(d);
    const T xmax = *std::max_element(x_t, x_t + d);
    float vsum = 0;
    auto lookup = [&](T v) {
      if constexpr (is_signed) return table[uint8_t(int32_t(127) - xmax + v)];
      else return (table + 255 - xmax)[v];
    };
    for (int64_t k = 0; k < d; ++k) vsum += lookup(x_t[k]);
    for (int64_t k = 0; k < d; ++k) {
      const float vt = lookup(x_t[k]);
      const float r = std::nearbyintf((vt * Y_scale) / vsum);
      if constexpr (is_signed) {
        // The int32 addition wraps in ORT's x86 build (+inf converts to INT32_MIN);
        // done in uint32 here so that the transcription itself is defined.
        const int32_t vq = static_cast<int32_t>(static_cast<uint32_t>(cvtt_int(r)) + static_cast<uint32_t>(y_zp));
        y_t[k] = vq > 255 ? static_cast<int8_t>(255) : static_cast<int8_t>(vq);
      } else {
        const uint32_t vq = static_cast<uint32_t>(cvtt_uint(r)) + static_cast<uint32_t>(y_zp);
        y_t[k] = vq > 255 ? static_cast<uint8_t>(255) : static_cast<uint8_t>(vq);
      }
    }
  }
  return y;
}

template <class T>
std::vector<T> run(const std::vector<T>& x, int64_t outer, int64_t d, int64_t inner, float x_scale, float y_scale, int32_t y_zp) {
  std::array<float, 256> table{};
  qlinear_softmax_table(x_scale, d, std::is_same_v<T, int8_t>, table.data());
  std::vector<T> y(x.size());
  qlinear_softmax<T>(x.data(), y.data(), outer, d, inner, table.data(), y_scale, y_zp);
  return y;
}

template <class T>
void sweep() {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> vd(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::uniform_real_distribution<float> ld(std::log(1e-3f), std::log(1.0f));
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t d = 1 + trial % 37, rows = 5;
    std::vector<T> x(static_cast<size_t>(rows * d));
    for (auto& v : x) v = static_cast<T>(vd(rng));
    const float xs = std::exp(ld(rng)), ys = trial % 3 ? 1.0f / (trial % 2 ? 255 : 256) : std::exp(ld(rng)) / 100;
    const int32_t yz = trial % 2 ? std::numeric_limits<T>::min() : vd(rng);
    REQUIRE(run<T>(x, rows, d, 1, xs, ys, yz) == naive<T>(x, d, xs, ys, yz));
    // The same rows laid out along a middle axis (stride 3) give the same values.
    std::vector<T> strided(x.size() * 3);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < d; ++k)
        for (int64_t i = 0; i < 3; ++i) strided[static_cast<size_t>((r * d + k) * 3 + i)] = x[static_cast<size_t>(r * d + k)];
    const auto ys3 = run<T>(strided, rows, d, 3, xs, ys, yz);
    const auto want = naive<T>(x, d, xs, ys, yz);
    for (size_t i = 0; i < strided.size(); ++i) REQUIRE(ys3[i] == want[i / 3]);
  }
}

}  // namespace

TEST_CASE("qlinear_softmax matches ONNX Runtime's QLinearSoftmax arithmetic", "[kernels][qsoftmax]") {
  sweep<uint8_t>();
  sweep<int8_t>();
}

TEST_CASE("qlinear_softmax gives ONNX Runtime's recorded results", "[kernels][qsoftmax]") {
  // onnxruntime-node 1.20.1 on DequantizeLinear -> Softmax(axis -1) -> QuantizeLinear, one row of 16.
  const std::vector<uint8_t> xu = {229, 220, 219, 227, 239, 225, 216, 237, 238, 220, 232, 227, 231, 215, 235, 223};
  CHECK(run<uint8_t>(xu, 1, 16, 1, 0.409003437f, 0.00392156886f, 0) ==
        std::vector<uint8_t>{2, 0, 0, 1, 104, 0, 0, 46, 69, 0, 6, 1, 4, 0, 20, 0});
  CHECK(run<uint8_t>(xu, 1, 16, 1, 0.0740575939f, 0.00139366894f, 243) == std::vector<uint8_t>(16, 255));
  const std::vector<int8_t> xs = {-11, -86, -91, -32, 65, -47, -120, 48, 62, -83, 15, -27, 0, -127, 34, -61};
  CHECK(run<int8_t>(xs, 1, 16, 1, 0.409003437f, 0.00392156886f, -128) ==
        std::vector<int8_t>{-128, -128, -128, -128, 68, -128, -128, -128, -70, -128, -128, -128, -128, -128, -128, -128});
  // int8 results past 127 wrap (ONNX Runtime casts without saturating below 256) and past 255 become -1.
  CHECK(run<int8_t>(xs, 1, 16, 1, 0.0740575939f, 0.00139366894f, 115) ==
        std::vector<int8_t>{116, 115, 115, 115, -1, 115, 115, -49, -1, 115, 123, 115, 118, 115, -109, 115});
}

TEST_CASE("qlinear_softmax results past int32 follow x86's conversions", "[kernels][qsoftmax]") {
  // A length-1 row: exp * floor(1 / y_scale) overflows to +inf once
  // floor(1 / y_scale) >= 149. onnxruntime-node 1.20.1 was measured to give
  // int8 -1 for zero point -128 (INT32_MIN + zp wraps past 255) and uint8 the
  // zero point; int8 with another zero point follows from the same conversions.
  for (float ys : {1.0f / 200, 1e-10f, 1e-40f}) {
    CHECK(run<int8_t>({5, -7}, 2, 1, 1, 0.1f, ys, -128) == std::vector<int8_t>{-1, -1});
    CHECK(run<int8_t>({5, -7}, 2, 1, 1, 0.1f, ys, 17) == std::vector<int8_t>{17, 17});
    CHECK(run<uint8_t>({5, 200}, 2, 1, 1, 0.1f, ys, 3) == std::vector<uint8_t>{3, 3});
  }
}
