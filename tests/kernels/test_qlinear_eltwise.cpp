#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/lookup_table.h"
#include "libquant/kernels/qlinear_eltwise.h"

using namespace quant::kernels;

namespace {

template <class T>
T saturate(double v) {
  return static_cast<T>(std::fmin(std::fmax(v, std::numeric_limits<T>::min()), std::numeric_limits<T>::max()));
}

// The instructions MLAS ends with, one by one: cvtps2dq (round half to even;
// NaN or out of int32 -> 0x80000000), packssdw (int32 -> int16, saturating),
// then packuswb / packsswb (int16 -> T, saturating).
template <class T>
T cvtps2dq_pack(float v) {
  int32_t i32 = std::numeric_limits<int32_t>::min();
  if (std::isfinite(v) && std::fabs(double(v)) < 2147483648.0) i32 = static_cast<int32_t>(std::nearbyint(double(v)));
  const int32_t i16 = std::clamp<int32_t>(i32, -32768, 32767);
  return static_cast<T>(std::clamp<int32_t>(i16, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

// ONNX Runtime 1.20's x86-64 arithmetic written out per element: MlasQLinearAdd*KernelAvx2
// (qladd_avx2.cpp, as its GCC -mfma build contracts it) and qlmul.cpp's SSE2 MlasQLinearMulKernel.
template <class T>
T naive_add(T a, T b, bool scalar_b, const QLinearBinaryParams& p) {
  const float ScaleRatio_AC = p.a_scale / p.c_scale;
  const float ScaleRatio_BC = p.b_scale / p.c_scale;
  const float ZeroPointA = static_cast<float>(p.a_zero_point), ZeroPointB = static_cast<float>(p.b_zero_point);
  // (float)ZeroPointC - (ScaleRatio_AC * ZeroPointA + ScaleRatio_BC * ZeroPointB), the first product fused.
  float FixedPart = static_cast<float>(p.c_zero_point) - std::fma(ScaleRatio_AC, ZeroPointA, ScaleRatio_BC * ZeroPointB);
  // IsScalarB: VectorFixedPart = _mm256_add_ps(VectorFixedPart, _mm256_mul_ps(vb, VectorScaleRatio_BC)), fused.
  if (scalar_b) FixedPart = std::fma(static_cast<float>(b), ScaleRatio_BC, FixedPart);
  // _mm256_fmadd_ps(b, ratio_bc, fixed) then _mm256_fmadd_ps(a, ratio_ac, that); with a scalar b only the latter.
  const float partial = scalar_b ? FixedPart : std::fma(static_cast<float>(b), ScaleRatio_BC, FixedPart);
  return cvtps2dq_pack<T>(std::fma(static_cast<float>(a), ScaleRatio_AC, partial));
}

template <class T>
T naive_mul(T a, T b, const QLinearBinaryParams& p) {
  const float ScaleRatio = p.a_scale * p.b_scale / p.c_scale;
  // _mm_mullo_epi16 / _mm_mulhi_epi16 of the debiased int16 values: the exact int32 product.
  const int32_t prod = (int32_t{a} - p.a_zero_point) * (int32_t{b} - p.b_zero_point);
  // _mm_add_ps(_mm_mul_ps(float(prod), ratio), zc): two roundings.
  const float scaled = static_cast<float>(prod) * ScaleRatio;
  return cvtps2dq_pack<T>(scaled + static_cast<float>(p.c_zero_point));
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

// Scale ratios from 2^-24 to 1e5, across and beyond the [2^-14, 2^8) range where ARM's MLAS switches to
// fixed point (x86 stays in float throughout), every pair of values, zero points at the ends and inside;
// products past int32 take cvtps2dq's 0x80000000 path.
template <class T>
void sweep_binary_wide_ratios() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> exponent(-24.0f, 12.0f), mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> vd(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  const int lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  std::vector<T> a, b;
  for (int x = lo; x <= hi; ++x)
    for (int y = lo; y <= hi; ++y) a.push_back(static_cast<T>(x)), b.push_back(static_cast<T>(y));
  std::vector<T> c(a.size());
  const int64_t n = static_cast<int64_t>(a.size());
  int overflowed = 0;
  for (int trial = 0; trial < 24; ++trial) {
    QLinearBinaryParams p;
    p.c_scale = 0.01f * mantissa(rng);
    p.a_scale = p.c_scale * std::exp2(std::floor(exponent(rng))) * mantissa(rng);
    p.b_scale = p.c_scale * std::exp2(std::floor(exponent(rng))) * mantissa(rng);
    if (trial % 6 == 5) p.a_scale = 1.0f, p.b_scale = 0.5f, p.c_scale = 1e-5f;  // mul products past int32
    const int zps[] = {lo, hi, 0, vd(rng)};
    p.a_zero_point = zps[trial % 4], p.b_zero_point = zps[(trial / 4) % 4], p.c_zero_point = vd(rng);
    qlinear_add<T>(a.data(), b.data(), false, c.data(), n, p);
    for (int64_t i = 0; i < n; ++i) REQUIRE(c[i] == naive_add<T>(a[i], b[i], false, p));
    qlinear_mul<T>(a.data(), b.data(), false, c.data(), n, p);
    for (int64_t i = 0; i < n; ++i) {
      REQUIRE(c[i] == naive_mul<T>(a[i], b[i], p));
      const float v = float((a[i] - p.a_zero_point) * (b[i] - p.b_zero_point)) * (p.a_scale * p.b_scale / p.c_scale);
      overflowed += v >= 2147483648.0f;
    }
    // Scalar b: every b value once, over all a.
    for (size_t j = 0; j < 256; j += 17) {
      const T bv = b[j * 256];
      qlinear_add<T>(a.data(), &bv, true, c.data(), 256, p);
      for (int64_t i = 0; i < 256; ++i) REQUIRE(c[i] == naive_add<T>(a[i], bv, true, p));
      qlinear_mul<T>(a.data(), &bv, true, c.data(), 256, p);
      for (int64_t i = 0; i < 256; ++i) REQUIRE(c[i] == naive_mul<T>(a[i], bv, p));
    }
  }
  CHECK(overflowed > 0);
}

// Values ONNX Runtime 1.20.1 (onnxruntime-node, x86-64 with AVX2) computed for these operands, each a case
// where the unfused float orders (or a saturation to 255 on overflow) give another answer.
struct OrtCase {
  float sa;
  int za;
  float sb;
  int zb;
  float sc;
  int zc, a, b, c;
};

template <class T>
void check_ort_cases(const std::vector<OrtCase>& cases, bool scalar_b, bool mul) {
  for (const OrtCase& k : cases) {
    const QLinearBinaryParams p{k.sa, k.sb, k.sc, k.za, k.zb, k.zc};
    const T a = static_cast<T>(k.a), b = static_cast<T>(k.b);
    T c = 0;
    if (mul) qlinear_mul<T>(&a, &b, scalar_b, &c, 1, p);
    else qlinear_add<T>(&a, &b, scalar_b, &c, 1, p);
    INFO("a=" << k.a << " b=" << k.b << " scales " << k.sa << " " << k.sb << " " << k.sc);
    CHECK(int(c) == k.c);
    // The same case in every lane of the vector path (and its tail).
    const std::vector<T> as(19, a), bs(19, b);
    std::vector<T> cs(19);
    if (mul) qlinear_mul<T>(as.data(), bs.data(), scalar_b, cs.data(), 19, p);
    else qlinear_add<T>(as.data(), bs.data(), scalar_b, cs.data(), 19, p);
    CHECK(cs == std::vector<T>(19, static_cast<T>(k.c)));
    CHECK(int(mul ? naive_mul<T>(a, b, p) : naive_add<T>(a, b, scalar_b, p)) == k.c);
  }
}

}  // namespace

TEST_CASE("qlinear_add / qlinear_mul over wide scale ratios match MLAS bit for bit", "[kernels][qlinear_eltwise]") {
  sweep_binary_wide_ratios<uint8_t>();
  sweep_binary_wide_ratios<int8_t>();
}

TEST_CASE("qlinear_add / qlinear_mul give ONNX Runtime's recorded results", "[kernels][qlinear_eltwise]") {
  // Both operands vectors (QLinearAdd's base term fused as fma(ra, za, rb * zb)).
  check_ort_cases<uint8_t>({{0.166042522f, 163, 0.71562171f, 10, 4.00036214e-07f, 123, 163, 10, 113},
                            {0.474629223f, 172, 0.202909008f, 18, 0.348402351f, 169, 123, 15, 100},
                            {0.474629223f, 172, 0.202909008f, 18, 0.348402351f, 169, 14, 203, 61}},
                           false, false);
  check_ort_cases<int8_t>({{0.0438530967f, -105, 0.531931162f, 27, 6.74162663e-07f, 33, -105, 27, 32},
                           {0.533803821f, -93, 0.000945335487f, -57, 0.000387487089f, -35, -93, 1, 106}},
                          false, false);
  // b a broadcast scalar (its term folded into the base with one more fma).
  check_ort_cases<uint8_t>({{0.0224485956f, 240, 0.162087977f, 62, 0.00402404461f, 85, 108, 83, 195},
                            {0.000417648494f, 240, 0.00343109318f, 202, 0.000556362153f, 165, 119, 198, 49},
                            {0.429778546f, 152, 0.0129032014f, 86, 0.00350077683f, 219, 150, 140, 173},
                            {0.00379208708f, 66, 0.241433024f, 181, 0.0367431231f, 143, 248, 177, 136},
                            {0.238760367f, 193, 0.000196224311f, 130, 0.00024092797f, 178, 193, 95, 149}},
                           true, false);
  check_ort_cases<int8_t>({{0.00614148285f, 42, 0.0132182091f, -87, 0.0149837276f, -69, 19, -10, -11},
                           {0.00542497495f, 20, 0.0198446475f, 55, 0.000102720682f, -124, -128, 96, -20},
                           {0.0143506117f, -23, 0.0698070601f, -22, 0.000147227533f, 2, 64, -40, -52},
                           {0.00932165422f, -56, 0.967080116f, -106, 0.0342788883f, -55, 78, -101, 122},
                           {0.000952963135f, -31, 0.0123607768f, -101, 0.0632472113f, 23, -9, 125, 67}},
                          true, false);
  // QLinearMul past int32: 244 * 21 * 420260.1 = 2.15e9 -> cvtps2dq's 0x80000000 -> 0; one step less stays 255.
  check_ort_cases<uint8_t>({{0.174352452f, 9, 0.365840048f, 165, 1.51775311e-07f, 224, 253, 186, 0},
                            {0.174352452f, 9, 0.365840048f, 165, 1.51775311e-07f, 224, 250, 186, 255}},
                           false, true);
}

TEST_CASE("qlinear_add / qlinear_mul uint8 match ONNX Runtime's formulas", "[kernels][qlinear_eltwise]") {
  sweep_binary<uint8_t>();
}
TEST_CASE("qlinear_add / qlinear_mul int8 match ONNX Runtime's formulas", "[kernels][qlinear_eltwise]") {
  sweep_binary<int8_t>();
}

// The dispatched qlinear_add (AVX2 + FMA on x86-64 CPUs that have them)
// against its portable definition, over every operand pair and both forms;
// qlinear_mul the same.
template <class T>
void check_vector_paths() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> sd(0.0005f, 0.5f);
  std::uniform_int_distribution<int> vd(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> a, b;
  for (int x = std::numeric_limits<T>::min(); x <= std::numeric_limits<T>::max(); ++x)
    for (int y = std::numeric_limits<T>::min(); y <= std::numeric_limits<T>::max(); ++y)
      a.push_back(static_cast<T>(x)), b.push_back(static_cast<T>(y));
  const int64_t n = static_cast<int64_t>(a.size()) - 3;  // a tail after the 8-wide steps
  std::vector<T> fast(a.size()), portable(a.size());
  for (int trial = 0; trial < 10; ++trial) {
    QLinearBinaryParams p{sd(rng), sd(rng), sd(rng), vd(rng), vd(rng), vd(rng)};
    if (trial == 9) p.a_scale = 1.0f, p.b_scale = 0.5f, p.c_scale = 1e-5f;  // mul products past int32
    for (bool scalar_b : {false, true}) {
      const T* bp = scalar_b ? b.data() + 77 * 256 + trial : b.data();
      qlinear_add<T>(a.data(), bp, scalar_b, fast.data(), n, p);
      detail::qlinear_add_portable<T>(a.data(), bp, scalar_b, portable.data(), n, p);
      REQUIRE(fast == portable);
      qlinear_mul<T>(a.data(), bp, scalar_b, fast.data(), n, p);
      detail::qlinear_mul_portable<T>(a.data(), bp, scalar_b, portable.data(), n, p);
      REQUIRE(fast == portable);
    }
  }
}

TEST_CASE("qlinear_add's and qlinear_mul's vector paths equal their portable definitions",
          "[kernels][qlinear_eltwise]") {
  check_vector_paths<uint8_t>();
  check_vector_paths<int8_t>();
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

TEST_CASE("apply_lookup_table's paths give the table's bytes", "[kernels][lookup_table]") {
  // Every byte value in every lane and at every tail length past the 64- and
  // 32-byte steps, tables of random bytes; in place (y == x) as well.
  std::mt19937 rng(21);
  std::vector<uint8_t> x(64 * 256 + 63);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i < 64 * 256 ? (i * 7 + i / 256) % 256 : rng());
  int ran = 0;
  for (int trial = 0; trial < 4; ++trial) {
    uint8_t table[256];
    for (auto& t : table) t = static_cast<uint8_t>(rng());
    for (IsaCap level : {IsaCap::Portable, IsaCap::Avx2, IsaCap::Avx512}) {
      for (int64_t n : {int64_t(x.size()), int64_t(x.size()) - 31, int64_t(33), int64_t(5), int64_t(0)}) {
        std::vector<uint8_t> y(x.size(), 0xA5);
        if (!detail::lookup_table_path(level, x.data(), table, y.data(), n)) break;
        ++ran;
        INFO("path " << isa_cap_name(level) << ", n " << n);
        for (int64_t i = 0; i < n; ++i) REQUIRE(y[size_t(i)] == table[x[size_t(i)]]);
        for (size_t i = size_t(n); i < y.size(); ++i) REQUIRE(y[i] == 0xA5);  // nothing written past n
        std::vector<uint8_t> z = x;
        REQUIRE(detail::lookup_table_path(level, z.data(), table, z.data(), n));
        REQUIRE(std::equal(z.begin(), z.begin() + n, y.begin()));
      }
    }
    // The dispatching entry point on 1 and 3 threads, int8 tensors.
    const int64_t n = int64_t(x.size()) * 3;  // pieces of 16384 on the threads, the last one short
    std::vector<int8_t> xs(static_cast<size_t>(n)), one(static_cast<size_t>(n)), three(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xs[size_t(i)] = static_cast<int8_t>(x[size_t(i) % x.size()]);
    const auto* ts = reinterpret_cast<const int8_t*>(table);
    apply_lookup_table<int8_t>(xs.data(), ts, one.data(), n);
    apply_lookup_table<int8_t>(xs.data(), ts, three.data(), n, 3);
    for (int64_t i = 0; i < n; ++i) REQUIRE(one[size_t(i)] == ts[static_cast<uint8_t>(xs[size_t(i)])]);
    REQUIRE(one == three);
  }
  REQUIRE(ran >= 4 * 5);  // the portable path always runs
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
