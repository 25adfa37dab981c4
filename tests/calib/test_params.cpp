#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "libquant/calib/params.h"

using namespace quant;
using namespace quant::calib;

namespace {

// The scale the formulas give, computed in double and rounded once to float.
float f(double v) { return static_cast<float>(v); }

QuantParams act(float lo, float hi, Schema s, DType p) { return choose_quant_params(Range{lo, hi}, s, p); }

}  // namespace

TEST_CASE("params: schema names", "[calib][params]") {
  for (Schema s : {Schema::Asymmetric, Schema::Symmetric, Schema::SymmetricUInt8, Schema::Power2Scale}) {
    auto back = schema_from_name(schema_name(s));
    REQUIRE(back.has_value());
    CHECK(*back == s);
  }
  CHECK(schema_name(Schema::SymmetricUInt8) == "symmetric-uint8");
  auto bad = schema_from_name("sym");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().code() == StatusCode::kBadInput);
  CHECK(bad.status().message() == "unknown schema 'sym' (valid: asymmetric, symmetric, symmetric-uint8, power2-scale)");
}

TEST_CASE("params: asymmetric", "[calib][params]") {
  SECTION("uint8, hand computed") {
    QuantParams p = act(-1.0f, 3.0f, Schema::Asymmetric, DType::UInt8);
    CHECK(p.qtype == DType::UInt8);
    CHECK(p.scale == std::vector<float>{f(4.0 / 255)});
    CHECK(p.zero_point == std::vector<int32_t>{64});  // round(0 + 1 / (4/255)) = round(63.75)
    CHECK(p.per_tensor());
  }
  SECTION("ties round half to even") {
    // scale = 127.5 / 255 = 0.5 exactly; -min / scale = 2.5 and 3.5.
    CHECK(act(-1.25f, 126.25f, Schema::Asymmetric, DType::UInt8).zero_point[0] == 2);
    CHECK(act(-1.75f, 125.75f, Schema::Asymmetric, DType::UInt8).zero_point[0] == 4);
    QuantParams s8 = act(-1.25f, 126.25f, Schema::Asymmetric, DType::Int8);
    CHECK(s8.scale[0] == 0.5f);
    CHECK(s8.zero_point[0] == -126);  // round(-128 + 2.5) = round(-125.5)
  }
  SECTION("the range is widened to include 0") {
    QuantParams pos = act(0.5f, 2.0f, Schema::Asymmetric, DType::UInt8);
    CHECK(pos.scale[0] == f(2.0 / 255));
    CHECK(pos.zero_point[0] == 0);
    QuantParams neg = act(-5.0f, -1.0f, Schema::Asymmetric, DType::UInt8);
    CHECK(neg.scale[0] == f(5.0 / 255));
    CHECK(neg.zero_point[0] == 255);  // clamped to qmax whatever the float rounding
    QuantParams neg8 = act(-5.0f, -1.0f, Schema::Asymmetric, DType::Int8);
    CHECK(neg8.zero_point[0] == 127);
  }
  SECTION("int16") {
    QuantParams p = act(-2.0f, 2.0f, Schema::Asymmetric, DType::Int16);
    CHECK(p.scale[0] == f(4.0 / 65535));
    CHECK(p.zero_point[0] == 0);  // round(-32768 + 32767.5) = round(-0.5) = -0 (even)
  }
  SECTION("a zero-width range gets scale 1") {
    QuantParams z = act(0.0f, 0.0f, Schema::Asymmetric, DType::UInt8);
    CHECK(z.scale[0] == 1.0f);
    CHECK(z.zero_point[0] == 0);
    CHECK(act(0.0f, 0.0f, Schema::Asymmetric, DType::Int8).zero_point[0] == -128);
    CHECK(act(1e-44f, 1e-44f, Schema::Asymmetric, DType::UInt8).scale[0] == 1.0f);  // too narrow for a float scale
    CHECK(act(std::numeric_limits<float>::quiet_NaN(), 2.0f, Schema::Asymmetric, DType::UInt8).scale[0] == f(2.0 / 255));
  }
}

TEST_CASE("params: symmetric", "[calib][params]") {
  QuantParams s8 = act(-2.0f, 1.0f, Schema::Symmetric, DType::Int8);
  CHECK(s8.qtype == DType::Int8);
  CHECK(s8.scale[0] == f(2.0 / 127));
  CHECK(s8.zero_point[0] == 0);
  // -absmax and +absmax both land on representable codes without saturating.
  CHECK(std::nearbyint(2.0f / s8.scale[0]) == 127);

  QuantParams s16 = act(-1.0f, 3.0f, Schema::Symmetric, DType::Int16);
  CHECK(s16.scale[0] == f(3.0 / 32767));
  CHECK(s16.zero_point[0] == 0);

  QuantParams u8 = act(-1.0f, 3.0f, Schema::Symmetric, DType::UInt8);
  CHECK(u8.qtype == DType::UInt8);
  CHECK(u8.scale[0] == f(3.0 / 127));
  CHECK(u8.zero_point[0] == 128);

  CHECK(act(0.0f, 0.0f, Schema::Symmetric, DType::Int8).scale[0] == 1.0f);
  // A positive-only range is still symmetric: half the codes go unused.
  CHECK(act(0.0f, 6.0f, Schema::Symmetric, DType::Int8).scale[0] == f(6.0 / 127));
}

TEST_CASE("params: symmetric-uint8", "[calib][params]") {
  QuantParams relu = act(0.0f, 6.0f, Schema::SymmetricUInt8, DType::Int8);
  CHECK(relu.qtype == DType::UInt8);
  CHECK(relu.scale[0] == f(6.0 / 255));
  CHECK(relu.zero_point[0] == 0);
  CHECK(act(0.5f, 6.0f, Schema::SymmetricUInt8, DType::UInt8).zero_point[0] == 0);

  QuantParams mixed = act(-0.1f, 6.0f, Schema::SymmetricUInt8, DType::Int8);
  CHECK(mixed.qtype == DType::Int8);
  CHECK(mixed.scale[0] == f(6.0 / 127));
  CHECK(mixed.zero_point[0] == 0);

  QuantParams wide = act(0.0f, 6.0f, Schema::SymmetricUInt8, DType::Int16);
  CHECK(wide.qtype == DType::Int16);
  CHECK(wide.scale[0] == f(6.0 / 32767));
}

TEST_CASE("params: power2-scale", "[calib][params]") {
  QuantParams p = act(-3.0f, 1.0f, Schema::Power2Scale, DType::Int8);
  CHECK(p.scale[0] == 0.03125f);  // 3/127 = 0.0236 -> 2^-5
  CHECK(p.zero_point[0] == 0);
  CHECK(act(-31.75f, 1.0f, Schema::Power2Scale, DType::Int8).scale[0] == 0.25f);  // 31.75/127 = 0.25 exactly stays
  CHECK(act(-100.0f, 200.0f, Schema::Power2Scale, DType::Int8).scale[0] == 2.0f);
  CHECK(act(-1.0f, 3.0f, Schema::Power2Scale, DType::UInt8).zero_point[0] == 128);
  CHECK(act(0.0f, 0.0f, Schema::Power2Scale, DType::Int8).scale[0] == 1.0f);
}

TEST_CASE("params: weights", "[calib][params]") {
  Tensor w = Tensor::from_vector<float>({2, 3}, {1.0f, -2.0f, 0.5f, 0.0f, 0.0f, 0.0f});
  SECTION("per tensor") {
    QuantParams p = choose_weight_params(w, -1, DType::Int8, Schema::Asymmetric);
    CHECK(p.qtype == DType::Int8);
    CHECK(p.scale == std::vector<float>{f(2.0 / 127)});
    CHECK(p.zero_point == std::vector<int32_t>{0});
  }
  SECTION("per channel along axis 0; an all-zero channel gets scale 1") {
    QuantParams p = choose_weight_params(w, 0, DType::Int8, Schema::Symmetric);
    CHECK(p.axis == 0);
    CHECK(p.scale == std::vector<float>{f(2.0 / 127), 1.0f});
    CHECK(p.zero_point == std::vector<int32_t>{0, 0});
  }
  SECTION("per channel along axis 1") {
    QuantParams p = choose_weight_params(w, 1, DType::Int8, Schema::Symmetric);
    CHECK(p.axis == 1);
    CHECK(p.scale == std::vector<float>{f(1.0 / 127), f(2.0 / 127), f(0.5 / 127)});
  }
  SECTION("int4 divides by 7; power2-scale rounds up") {
    CHECK(choose_weight_params(w, 0, DType::Int4, Schema::Symmetric).scale[0] == f(2.0 / 7));
    CHECK(choose_weight_params(w, 0, DType::Int4, Schema::Power2Scale).scale[0] == 0.5f);
    CHECK(choose_weight_params(w, 0, DType::Int8, Schema::Power2Scale).scale == std::vector<float>{0.03125f, 1.0f});  // 2/127 > 2^-6
  }
  SECTION("non-finite weights are ignored") {
    Tensor n = Tensor::from_vector<float>({3}, {std::numeric_limits<float>::quiet_NaN(), -4.0f,
                                                std::numeric_limits<float>::infinity()});
    CHECK(choose_weight_params(n, -1, DType::Int8, Schema::Symmetric).scale[0] == f(4.0 / 127));
  }
  SECTION("threads split a [K, N] weight's column maxima by rows: the same scales") {
    // 37 rows (no even split), the largest value of each column in a different
    // row, NaN and infinities (ignored) and -0 scattered.
    Tensor big(DType::Float32, {37, 19});
    float* v = big.data<float>();
    for (int64_t i = 0; i < big.size(); ++i) v[i] = 0.001f * static_cast<float>((i * 7919) % 1000) - 0.5f;
    for (int64_t c = 0; c < 19; ++c) v[(c * 5 % 37) * 19 + c] = -3.0f - 0.25f * static_cast<float>(c);
    v[3] = std::numeric_limits<float>::quiet_NaN();
    v[40] = std::numeric_limits<float>::infinity();
    v[41] = -std::numeric_limits<float>::infinity();
    v[42] = -0.0f;
    const QuantParams one = choose_weight_params(big, 1, DType::Int8, Schema::Symmetric);
    for (int threads : {2, 3, 8, 64}) {
      CAPTURE(threads);
      const QuantParams many = choose_weight_params(big, 1, DType::Int8, Schema::Symmetric, 0, threads);
      CHECK(many.scale == one.scale);
      CHECK(many.zero_point == one.zero_point);
    }
    CHECK(one.scale[4] == f(4.0 / 127));
  }
  SECTION("float16 and float64 weights") {
    Tensor h(DType::Float16, {2});
    h.data<uint16_t>()[0] = 0x3C00;  // 1.0
    h.data<uint16_t>()[1] = 0xC400;  // -4.0
    CHECK(choose_weight_params(h, -1, DType::Int8, Schema::Symmetric).scale[0] == f(4.0 / 127));
    Tensor d = Tensor::from_vector<double>({2}, {0.25, -0.5});
    CHECK(choose_weight_params(d, -1, DType::Int8, Schema::Symmetric).scale[0] == f(0.5 / 127));
  }
}
