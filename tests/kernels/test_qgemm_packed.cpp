// The fast integer GEMM (qgemm_packed.h) against the reference kernels, bit
// for bit: every ISA this CPU runs (forced one at a time), every 8-bit type
// pair, odd M / N / K (panel and k-group tails; M = 1 takes the ISA's row
// kernel), zero points per tensor, per
// column and absent, int32 and requantized outputs in both requantization
// modes, 1 and 3 threads.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/requant.h"

using namespace quant::kernels;

namespace {

template <class T>
std::vector<T> random_bytes(std::mt19937& rng, size_t count, bool extremes) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(count);
  for (auto& x : v) {
    x = static_cast<T>(d(rng));
    // The worst case for int16 pair sums: 255 * -128 (or 127) next to each other.
    if (extremes) x = (x & 3) ? (std::is_signed_v<T> ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max())
                              : std::numeric_limits<T>::max();
  }
  return v;
}

template <class TA, class TB>
void check_shape(std::mt19937& rng, const detail::QGemmIsa& isa, int64_t m, int64_t n, int64_t k, int zb_kind,
                 bool extremes, BLayout layout) {
  const std::vector<TA> a = random_bytes<TA>(rng, static_cast<size_t>(m * k), extremes);
  const std::vector<TB> b = random_bytes<TB>(rng, static_cast<size_t>(k * n), extremes);
  const TA za = extremes ? TA{0} : random_bytes<TA>(rng, 1, false)[0];
  std::vector<TB> zb;
  if (zb_kind == 1) zb = random_bytes<TB>(rng, 1, false);
  if (zb_kind == 2) zb = random_bytes<TB>(rng, static_cast<size_t>(n), false);
  std::vector<int32_t> bias(static_cast<size_t>(n));
  for (auto& v : bias) v = std::uniform_int_distribution<int32_t>(-100000, 100000)(rng);

  QGemmArgs<TA, TB> args;
  args.m = m, args.n = n, args.k = k, args.a = a.data(), args.lda = k, args.a_zero_point = za;
  args.b = b.data(), args.ldb = layout == BLayout::KxN ? n : k, args.b_layout = layout;
  args.b_zero_point = zb.empty() ? nullptr : zb.data(), args.b_zero_point_count = static_cast<int64_t>(zb.size());
  std::vector<int32_t> want(static_cast<size_t>(m * n));
  args.c = want.data(), args.ldc = n;
  qgemm_reference(args);

  INFO("isa=" << isa.name << " m=" << m << " n=" << n << " k=" << k << " zb_kind=" << zb_kind << " extremes=" << extremes
              << " layout=" << (layout == BLayout::KxN ? "KxN" : "NxK"));
  const PackedQB packed = PackedQB::pack(b.data(), args.ldb, layout, k, n, args.b_zero_point, args.b_zero_point_count);
  for (int threads : {1, 3}) {
    std::vector<int32_t> got(static_cast<size_t>(m * n), -7);
    QGemmOutput out;
    out.y = got.data(), out.ldy = n;
    qgemm_packed<TA>(m, a.data(), k, za, packed, nullptr, out, threads, isa);
    REQUIRE(got == want);
    std::vector<int32_t> got_fast(static_cast<size_t>(m * n), -7);
    QGemmArgs<TA, TB> fast = args;
    fast.c = got_fast.data();
    qgemm_fast(fast, threads, isa);
    REQUIRE(got_fast == want);
  }
  // Requantized with bias: per tensor and per column multipliers, both modes.
  for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
    for (bool per_column : {false, true}) {
      std::vector<float> mult(per_column ? static_cast<size_t>(n) : 1);
      for (auto& v : mult) v = std::uniform_real_distribution<float>(1e-5f, 0.02f)(rng);
      const Requantizer r = make_requantizer(mode, mult, static_cast<int32_t>(rng() % 256) - (std::is_signed_v<TA> ? 128 : 0));
      std::vector<uint8_t> want_u8(static_cast<size_t>(m * n)), got_u8(static_cast<size_t>(m * n), 1);
      if (std::is_signed_v<TA>) {
        Requantizer rs = r;
        rs.zero_point = std::clamp(rs.zero_point, -128, 127);
        std::vector<int8_t> want_s8(static_cast<size_t>(m * n)), got_s8(static_cast<size_t>(m * n), 1);
        requantize<int8_t>(want.data(), m, n, n, bias.data(), rs, 0, want_s8.data(), n, 1);
        QGemmOutput out;
        out.requant = &rs, out.type = detail::QOutType::S8, out.y = got_s8.data(), out.ldy = n;
        qgemm_packed<TA>(m, a.data(), k, za, packed, bias.data(), out, 2, isa);
        INFO("mode=" << (mode == RequantMode::Float ? "float" : "fixed") << " per_column=" << per_column);
        REQUIRE(got_s8 == want_s8);
      } else {
        requantize<uint8_t>(want.data(), m, n, n, bias.data(), r, 0, want_u8.data(), n, 1);
        QGemmOutput out;
        out.requant = &r, out.type = detail::QOutType::U8, out.y = got_u8.data(), out.ldy = n;
        qgemm_packed<TA>(m, a.data(), k, za, packed, bias.data(), out, 2, isa);
        INFO("mode=" << (mode == RequantMode::Float ? "float" : "fixed") << " per_column=" << per_column);
        REQUIRE(got_u8 == want_u8);
      }
    }
  }
}

template <class TA, class TB>
void sweep(std::mt19937& rng) {
  for (const detail::QGemmIsa* isa : detail::supported_qgemm_isas()) {
    for (int64_t m : {1, 3, 8, 13})
      for (int64_t n : {1, 7, 16, 33})
        for (int64_t k : {1, 3, 4, 21, 130}) {
          const int zb_kind = static_cast<int>((m + n + k) % 3);
          check_shape<TA, TB>(rng, *isa, m, n, k, zb_kind, false, (m + k) % 2 ? BLayout::KxN : BLayout::NxK);
        }
    check_shape<TA, TB>(rng, *isa, 9, 20, 1000, 0, true, BLayout::KxN);
    // One row (the row kernel): extreme bytes over a long K, 3 panels.
    check_shape<TA, TB>(rng, *isa, 1, 40, 1001, 1, true, BLayout::KxN);
    check_shape<TA, TB>(rng, *isa, 9, 20, 257, 2, true, BLayout::NxK);
  }
}

}  // namespace

TEST_CASE("every ISA is listed and the best one is the last", "[kernels][qgemm_packed]") {
  const auto isas = detail::supported_qgemm_isas();
  REQUIRE(!isas.empty());
  REQUIRE(std::string(isas.front()->name) == "portable");
  REQUIRE(&detail::best_qgemm_isa() == isas.back());
  for (const auto* isa : isas) REQUIRE(isa->mr <= detail::kQMaxMr);
}

TEST_CASE("qgemm_packed u8 x s8 matches the reference bit for bit", "[kernels][qgemm_packed]") {
  std::mt19937 rng(11);
  sweep<uint8_t, int8_t>(rng);
}

TEST_CASE("qgemm_packed u8 x u8 matches the reference bit for bit", "[kernels][qgemm_packed]") {
  std::mt19937 rng(12);
  sweep<uint8_t, uint8_t>(rng);
}

TEST_CASE("qgemm_packed s8 x s8 matches the reference bit for bit", "[kernels][qgemm_packed]") {
  std::mt19937 rng(13);
  sweep<int8_t, int8_t>(rng);
}

TEST_CASE("qgemm_packed s8 x u8 matches the reference bit for bit", "[kernels][qgemm_packed]") {
  std::mt19937 rng(14);
  sweep<int8_t, uint8_t>(rng);
}

TEST_CASE("qgemm_packed wraps modulo 2^32 like the reference", "[kernels][qgemm_packed]") {
  // K = 70000 of 255 * -128 products: the true sum leaves int32.
  const int64_t k = 70000;
  std::vector<uint8_t> a(static_cast<size_t>(k), 255);
  std::vector<int8_t> b(static_cast<size_t>(k), -128);
  QGemmArgs<uint8_t, int8_t> args;
  args.m = 1, args.n = 1, args.k = k, args.a = a.data(), args.lda = k, args.b = b.data(), args.ldb = 1;
  int32_t want = 0;
  args.c = &want, args.ldc = 1;
  qgemm_reference(args);
  for (const detail::QGemmIsa* isa : detail::supported_qgemm_isas()) {
    int32_t got = 1;
    args.c = &got;
    qgemm_fast(args, 1, *isa);
    INFO(isa->name);
    REQUIRE(got == want);
  }
}
