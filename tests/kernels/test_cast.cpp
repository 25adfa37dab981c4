// Half / bfloat16 encodings and the Cast conversion rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "libquant/kernels/cast.h"

using quant::kernels::double_to_half;
using quant::kernels::half_to_float;

TEST_CASE("every half value round-trips through float", "[kernels][cast]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    INFO("half bits " << h);
    if (nan) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(half_to_float(quant::kernels::float_to_half(f))));
    } else {
      REQUIRE(quant::kernels::float_to_half(f) == h);
    }
  }
}

TEST_CASE("double_to_half rounds to nearest even at every boundary", "[kernels][cast]") {
  // Between each pair of adjacent finite positive halves: the midpoint goes to
  // the even one, anything off the midpoint to the nearer one.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = half_to_float(static_cast<uint16_t>(h));
    const double hi = half_to_float(static_cast<uint16_t>(h + 1));
    const double mid = (lo + hi) / 2;
    const uint16_t even = (h % 2 == 0) ? static_cast<uint16_t>(h) : static_cast<uint16_t>(h + 1);
    INFO("half bits " << h);
    REQUIRE(double_to_half(mid) == even);
    REQUIRE(double_to_half(std::nextafter(mid, 0.0)) == h);
    REQUIRE(double_to_half(std::nextafter(mid, 1e9)) == h + 1);
    REQUIRE(double_to_half(-mid) == (even | 0x8000));
  }
  // 65504 is the largest half; from its midpoint with the next step up (65520) on, infinity.
  CHECK(double_to_half(65519.99) == 0x7BFF);
  CHECK(double_to_half(65520.0) == 0x7C00);
  CHECK(double_to_half(1e300) == 0x7C00);
  CHECK(double_to_half(-std::numeric_limits<double>::infinity()) == 0xFC00);
  CHECK(double_to_half(std::ldexp(1.0, -25)) == 0);                      // tie with 0: even
  CHECK(double_to_half(std::nextafter(std::ldexp(1.0, -25), 1.0)) == 1);  // just above: smallest subnormal
  CHECK(double_to_half(1e-300) == 0);
  CHECK(double_to_half(-0.0) == 0x8000);
  CHECK(std::isnan(half_to_float(double_to_half(std::nan("")))));
}

TEST_CASE("bfloat16 truncates and keeps NaN a NaN", "[kernels][cast]") {
  CHECK(quant::kernels::float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(quant::kernels::float_to_bfloat16(1.0078125f * 1.5f) == 0x3FC1);  // low bits dropped, not rounded up
  uint32_t bits = 0x7F800001;  // a NaN with only the lowest payload bit set
  float nan;
  std::memcpy(&nan, &bits, sizeof nan);
  CHECK(std::isnan(quant::kernels::bfloat16_to_float(quant::kernels::float_to_bfloat16(nan))));
  CHECK(quant::kernels::bfloat16_to_float(0xC040) == -3.0f);
}

TEST_CASE("float to integer truncates and saturates, NaN gives 0", "[kernels][cast]") {
  using quant::kernels::saturate_trunc;
  CHECK(saturate_trunc<int8_t>(-1.9f) == -1);
  CHECK(saturate_trunc<int8_t>(127.9f) == 127);
  CHECK(saturate_trunc<int8_t>(128.0f) == 127);
  CHECK(saturate_trunc<int8_t>(-128.9f) == -128);
  CHECK(saturate_trunc<int8_t>(-129.0f) == -128);
  CHECK(saturate_trunc<uint8_t>(-0.9f) == 0);
  CHECK(saturate_trunc<uint8_t>(-5.0f) == 0);
  CHECK(saturate_trunc<uint16_t>(65535.5) == 65535);
  CHECK(saturate_trunc<int64_t>(9.3e18) == std::numeric_limits<int64_t>::max());
  CHECK(saturate_trunc<int64_t>(-9.3e18) == std::numeric_limits<int64_t>::min());
  CHECK(saturate_trunc<int64_t>(-9223372036854775808.0) == std::numeric_limits<int64_t>::min());
  CHECK(saturate_trunc<uint64_t>(1.8e19) == 18000000000000000000ull);
  CHECK(saturate_trunc<uint64_t>(1.9e19) == std::numeric_limits<uint64_t>::max());
  CHECK(saturate_trunc<int32_t>(std::nanf("")) == 0);
  CHECK(saturate_trunc<int32_t>(-std::numeric_limits<double>::infinity()) == std::numeric_limits<int32_t>::min());
}

TEST_CASE("cast_array through the type tags", "[kernels][cast]") {
  using namespace quant::kernels;
  const std::vector<uint8_t> flags = {0, 1};
  std::vector<uint16_t> halves(2);
  cast_array<BoolTag, Float16Tag>(flags.data(), halves.data(), 2);
  CHECK(halves == std::vector<uint16_t>{0x0000, 0x3C00});
  std::vector<int16_t> ints(2);
  cast_array<Float16Tag, int16_t>(std::vector<uint16_t>{0xC500, 0x7C00}.data(), ints.data(), 2);  // -5, inf
  CHECK(ints == std::vector<int16_t>{-5, 32767});
  std::vector<uint8_t> bools(3);
  cast_array<int64_t, BoolTag>(std::vector<int64_t>{0, -7, 256}.data(), bools.data(), 3);
  CHECK(bools == std::vector<uint8_t>{0, 1, 1});
  std::vector<uint16_t> bf(1);
  cast_array<double, BFloat16Tag>(std::vector<double>{-2.0}.data(), bf.data(), 1);
  CHECK(bf[0] == 0xC000);
}
