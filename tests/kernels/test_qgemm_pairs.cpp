// The "pairs" micro-kernels (QGemmIsa::a_unsigned_pairs / a_signed_pairs,
// AVX2: VPMADDUBSW) and the bound that selects them (s8_pairs_fit_int16,
// PackedQB / PackedQConvWeights::pairs_bounded): on weights whose packed
// pairs pass it, the pairs kernel, the exact (widening) kernel and the
// reference agree bit for bit, with pairs exactly at the bound and
// activations 255; weights one over the bound are not flagged (and there the
// pairs kernel would saturate); odd K and panel / K padding; convolution
// weights bounded only in ONNX Runtime's K order (tap major), packed so.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "libquant/kernels/qconv.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/qgemm_packed.h"
#include "tests/kernels/conv_case.h"
#include "tests/kernels/random_ints.h"
#include "tests/skip.h"

using namespace quant::kernels;

namespace {

// The ISAs this CPU runs that have pairs kernels (and pass `keep`: one of
// the fused forms).
std::vector<const detail::QGemmIsa*> pairs_isas(bool (*keep)(const detail::QGemmIsa&) = nullptr) {
  std::vector<const detail::QGemmIsa*> v;
  for (const detail::QGemmIsa* isa : detail::supported_qgemm_isas())
    if (isa->a_unsigned_pairs && isa->a_signed_pairs && (!keep || keep(*isa))) v.push_back(isa);
  return v;
}

// Pairs at the bound (sum of the positive values or of the negative ones'
// magnitudes exactly 128), and of opposite signs at the int8 limits.
const int8_t kAtBound[][2] = {{64, 64},   {127, 1},   {1, 127},    {-128, 0}, {0, -128}, {-64, -64}, {-1, -127},
                              {-127, -1}, {127, -128}, {-128, 127}, {28, 100}, {-100, -28}, {100, -100}};

// k int8 values whose pairs (2i, 2i+1) pass the bound: a third of the pairs
// from kAtBound, the others random inside it; an odd K's last value (paired
// with the zero padding) is any int8.
std::vector<int8_t> bounded_line(std::mt19937& rng, int64_t k) {
  std::vector<int8_t> v(static_cast<size_t>(k));
  std::uniform_int_distribution<int> any(-128, 127);
  for (int64_t t = 0; t + 1 < k; t += 2) {
    int w0, w1;
    if (rng() % 3 == 0) {
      const auto& p = kAtBound[rng() % std::size(kAtBound)];
      w0 = p[0], w1 = p[1];
    } else {
      w0 = any(rng);
      // w0 >= 0: w1 in [-128, 128 - w0]; w0 < 0: w1 in [-128 - w0, 127].
      w1 = w0 >= 0 ? std::uniform_int_distribution<int>(-128, std::min(127, 128 - w0))(rng)
                   : std::uniform_int_distribution<int>(-128 - w0, 127)(rng);
    }
    v[static_cast<size_t>(t)] = static_cast<int8_t>(w0), v[static_cast<size_t>(t + 1)] = static_cast<int8_t>(w1);
  }
  if (k % 2) v.back() = static_cast<int8_t>(any(rng));
  return v;
}

// The value of TW whose packed (int8) byte is s: uint8 weights are flipped.
template <class TW>
TW weight_from_packed(int8_t s) {
  return static_cast<TW>(static_cast<uint8_t>(s) ^ (std::is_unsigned_v<TW> ? 0x80 : 0));
}

// Activations, half of them the extreme that packs to the byte 255 (uint8
// 255, int8 127), so that every bounded pair reaches 255 * 128 somewhere.
template <class T>
std::vector<T> extreme_activations(std::mt19937& rng, size_t count) {
  std::vector<T> v = quant::testing::random_values<T>(rng, count);
  for (auto& x : v)
    if (rng() % 2) x = std::numeric_limits<T>::max();
  return v;
}

// tile[r][c] = sum over the packed groups of A[r][k] * B[k][c], plainly.
template <class TA, class TB>
std::vector<int32_t> plain_tile(int64_t groups, int mr, const uint8_t* a, const uint8_t* b) {
  std::vector<int32_t> t(static_cast<size_t>(mr * detail::kQNr), 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < mr; ++r)
      for (int c = 0; c < detail::kQNr; ++c)
        for (int q = 0; q < 4; ++q)
          t[static_cast<size_t>(r * detail::kQNr + c)] += static_cast<TA>(a[g * mr * 4 + r * 4 + q]) *
                                                          static_cast<TB>(b[g * 64 + c * 4 + q]);
  return t;
}

}  // namespace

TEST_CASE("s8_pairs_fit_int16 holds exactly when VPMADDUBSW cannot saturate", "[kernels][qgemm_pairs]") {
  // Every int8 pair: the sum a0 w0 + a1 w1 is linear in a, so its extremes
  // over [0, 255]^2 are at the corners.
  int64_t passing = 0;
  for (int w0 = -128; w0 <= 127; ++w0)
    for (int w1 = -128; w1 <= 127; ++w1) {
      bool fits = true;
      for (int a0 : {0, 255})
        for (int a1 : {0, 255}) fits = fits && a0 * w0 + a1 * w1 >= -32768 && a0 * w0 + a1 * w1 <= 32767;
      const uint8_t bytes[2] = {static_cast<uint8_t>(w0), static_cast<uint8_t>(w1)};
      INFO("w0=" << w0 << " w1=" << w1);
      REQUIRE(detail::s8_pairs_fit_int16(bytes, 2) == fits);
      passing += fits;
    }
  CHECK(passing > 0);
  // Only aligned pairs count: 127, 127 at bytes 1 and 2 is two pairs (0, 127), (127, 0).
  const uint8_t straddling[4] = {0, 127, 127, 0};
  CHECK(detail::s8_pairs_fit_int16(straddling, 4));
  const uint8_t over[4] = {0, 0, 127, 2};
  CHECK_FALSE(detail::s8_pairs_fit_int16(over, 4));
}

TEST_CASE("pairs micro-kernels equal the exact kernels on bounded weights", "[kernels][qgemm_pairs]") {
  const auto isas = pairs_isas();
  if (isas.empty()) QTOOL_SKIP("no ISA with a pairs kernel on this host");
  std::mt19937 rng(41);
  for (const detail::QGemmIsa* isa : isas) {
    const int mr = isa->mr;
    for (int64_t groups : {1, 2, 3, 7, 16, 65}) {
      INFO("isa=" << isa->name << " groups=" << groups);
      // a_unsigned: A activations (uint8), B weights (int8, 16 columns of 4 k per group).
      const auto a_u = extreme_activations<uint8_t>(rng, static_cast<size_t>(groups * mr * 4));
      std::vector<uint8_t> b_s(static_cast<size_t>(groups * 64));
      for (int c = 0; c < detail::kQNr; ++c) {
        const auto line = bounded_line(rng, groups * 4);
        for (int64_t t = 0; t < groups * 4; ++t)
          b_s[static_cast<size_t>(t / 4 * 64 + c * 4 + t % 4)] = static_cast<uint8_t>(line[static_cast<size_t>(t)]);
      }
      REQUIRE(detail::s8_pairs_fit_int16(b_s.data(), static_cast<int64_t>(b_s.size())));
      std::vector<int32_t> exact(static_cast<size_t>(mr * detail::kQNr)), pairs(exact.size(), -7);
      isa->a_unsigned(groups, a_u.data(), b_s.data(), exact.data());
      isa->a_unsigned_pairs(groups, a_u.data(), b_s.data(), pairs.data());
      REQUIRE(exact == plain_tile<uint8_t, int8_t>(groups, mr, a_u.data(), b_s.data()));
      REQUIRE(pairs == exact);
      // a_signed: A weights (int8 rows), B activations (uint8).
      std::vector<uint8_t> a_s(static_cast<size_t>(groups * mr * 4));
      for (int r = 0; r < mr; ++r) {
        const auto line = bounded_line(rng, groups * 4);
        for (int64_t t = 0; t < groups * 4; ++t)
          a_s[static_cast<size_t>(t / 4 * mr * 4 + r * 4 + t % 4)] = static_cast<uint8_t>(line[static_cast<size_t>(t)]);
      }
      const auto b_u = extreme_activations<uint8_t>(rng, static_cast<size_t>(groups * 64));
      isa->a_signed(groups, a_s.data(), b_u.data(), exact.data());
      isa->a_signed_pairs(groups, a_s.data(), b_u.data(), pairs.data());
      REQUIRE(exact == plain_tile<int8_t, uint8_t>(groups, mr, a_s.data(), b_u.data()));
      REQUIRE(pairs == exact);
    }
  }
}

TEST_CASE("the fused pairs kernel stores each sum of a panel's first columns exactly", "[kernels][qgemm_pairs]") {
  // a_signed_pairs_requant on one panel of 1 to 16 columns (the narrow
  // kernel takes 1 to 3, the half tile 4 to 8) with a scale of 1 and sums
  // small enough that the output is the plain sum plus the row's constant:
  // a sum off by one shows.
  const auto isas = pairs_isas([](const detail::QGemmIsa& i) { return i.a_signed_pairs_requant != nullptr; });
  if (isas.empty()) QTOOL_SKIP("no ISA with a fused pairs kernel on this host");
  std::mt19937 rng(47);
  for (const detail::QGemmIsa* isa : isas) {
    const int mr = isa->mr;
    for (int64_t groups : {1, 2, 9})
      for (int cols = 1; cols <= detail::kQNr; ++cols)
        for (int rows = 1; rows <= mr; ++rows) {
          INFO("isa=" << isa->name << " groups=" << groups << " cols=" << cols << " rows=" << rows);
          std::vector<uint8_t> a(static_cast<size_t>(groups * mr * 4)), b(static_cast<size_t>(groups * 64));
          for (auto& v : a) v = static_cast<uint8_t>(std::uniform_int_distribution<int>(-3, 3)(rng));
          for (auto& v : b) v = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 3)(rng));
          const std::vector<int32_t> sums = plain_tile<int8_t, uint8_t>(groups, mr, a.data(), b.data());
          std::vector<int32_t> row_add(static_cast<size_t>(mr));
          std::vector<float> row_scale(static_cast<size_t>(mr), 1.0f);
          for (auto& v : row_add) v = std::uniform_int_distribution<int32_t>(-20, 20)(rng);
          detail::QRequantTile t;
          t.row_add = row_add.data(), t.row_scale = row_scale.data();
          t.lo = -128, t.hi = 127, t.zero_point = 128;
          t.rows = rows, t.cols = cols;
          const int64_t ldy = detail::kQNr + 3;
          std::vector<uint8_t> y(static_cast<size_t>(mr * ldy), 7);
          t.y = y.data(), t.ldy = ldy;
          isa->a_signed_pairs_requant(groups, a.data(), b.data(), b.data(), t);
          for (int r = 0; r < mr; ++r)
            for (int c = 0; c < ldy; ++c) {
              const bool inside = r < rows && c < cols;
              const int want = inside ? sums[static_cast<size_t>(r * detail::kQNr + c)] + row_add[static_cast<size_t>(r)] + 128 : 7;
              REQUIRE((want >= 0 && want <= 255));
              REQUIRE(int{y[static_cast<size_t>(r * ldy + c)]} == want);
            }
        }
  }
}

TEST_CASE("the pairs run kernel has its tile kernel's bits, tile after tile", "[kernels][qgemm_pairs]") {
  // a_signed_pairs_requant_run over `tiles` whole tiles against one
  // a_signed_pairs_requant call per tile: packed B panels and a direct walk
  // (two taps of several quads), with and without row zero points, a clamp
  // narrower than the output range, output rows wider than the tiles.
  const auto isas = pairs_isas([](const detail::QGemmIsa& i) { return i.a_signed_pairs_requant_run != nullptr; });
  if (isas.empty()) QTOOL_SKIP("no ISA with a pairs run kernel on this host");
  std::mt19937 rng(43);
  int64_t clamped = 0;
  for (const detail::QGemmIsa* isa : isas) {
    const int mr = isa->mr;
    for (int64_t groups : {1, 3, 16, 65})
      for (int64_t tiles : {1, 2, 5})
        for (bool direct : {false, true})
          for (bool zp : {false, true}) {
            INFO("isa=" << isa->name << " groups=" << groups << " tiles=" << tiles << " direct=" << direct << " zp=" << zp);
            std::vector<uint8_t> a(static_cast<size_t>(groups * mr * 4));
            for (int r = 0; r < mr; ++r) {
              const auto line = bounded_line(rng, groups * 4);
              for (int64_t t = 0; t < groups * 4; ++t)
                a[static_cast<size_t>(t / 4 * mr * 4 + r * 4 + t % 4)] = static_cast<uint8_t>(line[static_cast<size_t>(t)]);
            }
            // Packed: panel j's groups one after the other (64 bytes each).
            // Direct: group (tap, quad) of the column at pixel p at
            // tap_off[tap] + quad * pitch + 4 p, the second panel 16 pixels on.
            const int64_t cols = tiles * 2 * detail::kQNr;
            const int64_t taps = direct ? 2 : 0, quads = direct ? (groups + 1) / 2 : 0;
            const int64_t walk_groups = direct ? taps * quads : groups;
            const int64_t pitch = 4 * (cols + 8), panel_bytes = direct ? 4 * detail::kQNr : 64 * walk_groups;
            const int64_t tap_off[2] = {0, quads * pitch};
            const size_t b_size = static_cast<size_t>(direct ? taps * quads * pitch : panel_bytes * 2 * tiles);
            const auto b = extreme_activations<uint8_t>(rng, b_size);
            std::vector<uint8_t> a_walk = a;
            a_walk.resize(static_cast<size_t>(walk_groups * mr * 4), 3);
            std::vector<int32_t> row_add(static_cast<size_t>(mr)), row_zp(static_cast<size_t>(mr));
            std::vector<int32_t> col_sum(static_cast<size_t>(cols));
            std::vector<float> row_scale(static_cast<size_t>(mr));
            for (auto& v : row_add) v = std::uniform_int_distribution<int32_t>(-40000, 40000)(rng);
            for (auto& v : row_zp) v = std::uniform_int_distribution<int32_t>(-128, 127)(rng);
            for (auto& v : col_sum) v = std::uniform_int_distribution<int32_t>(0, 255 * 400)(rng);
            for (auto& v : row_scale) v = std::uniform_real_distribution<float>(0.0002f, 0.004f)(rng);
            detail::QRequantTile t;
            t.row_add = row_add.data(), t.row_scale = row_scale.data();
            t.row_zp = zp ? row_zp.data() : nullptr, t.col_sum = zp ? col_sum.data() : nullptr;
            t.lo = -90, t.hi = 150, t.zero_point = 100;
            t.rows = mr, t.cols = 2 * detail::kQNr;
            t.direct = direct ? detail::QDirectB{tap_off, taps, quads, pitch} : detail::QDirectB{};
            const int64_t ldy = cols + 5;
            std::vector<uint8_t> want(static_cast<size_t>(mr * ldy), 7), got(want.size(), 7);
            for (int64_t i = 0; i < tiles; ++i) {
              detail::QRequantTile u = t;
              u.y = want.data() + i * 2 * detail::kQNr, u.ldy = ldy;
              if (zp) u.col_sum = col_sum.data() + i * 2 * detail::kQNr;
              const uint8_t* b0 = b.data() + 2 * i * panel_bytes;
              isa->a_signed_pairs_requant(walk_groups, a_walk.data(), b0, b0 + panel_bytes, u);
            }
            t.y = got.data(), t.ldy = ldy;
            isa->a_signed_pairs_requant_run(walk_groups, a_walk.data(), b.data(), panel_bytes, tiles, t);
            REQUIRE(got == want);
            clamped += std::count(want.begin(), want.end(), uint8_t{10}) + std::count(want.begin(), want.end(), uint8_t{250});
            for (int r = 0; r < mr; ++r) CHECK(want[static_cast<size_t>(r * ldy + cols)] == 7);  // past the tiles: untouched
          }
  }
  CHECK(clamped > 0);  // the clamp was reached
}

TEST_CASE("a pair one over the bound saturates the pairs kernel", "[kernels][qgemm_pairs]") {
  // Why the flag matters: the bound is tight for VPMADDUBSW.
  const auto isas = pairs_isas();
  if (isas.empty()) QTOOL_SKIP("no ISA with a pairs kernel on this host");
  for (const detail::QGemmIsa* isa : isas) {
    for (const auto& pair : {std::pair<int8_t, int8_t>{127, 2}, std::pair<int8_t, int8_t>{-128, -1}}) {
      std::vector<uint8_t> a(static_cast<size_t>(isa->mr * 4), 255), b(64, 0);
      b[0] = static_cast<uint8_t>(pair.first), b[1] = static_cast<uint8_t>(pair.second);
      std::vector<int32_t> exact(static_cast<size_t>(isa->mr * detail::kQNr)), pairs(exact.size());
      isa->a_unsigned(1, a.data(), b.data(), exact.data());
      isa->a_unsigned_pairs(1, a.data(), b.data(), pairs.data());
      CHECK(exact[0] == 255 * (pair.first + pair.second));
      CHECK(pairs[0] == (pair.first > 0 ? 32767 : -32768));
      CHECK_FALSE(detail::s8_pairs_fit_int16(b.data(), 64));
    }
  }
}

namespace {

// B [K, N] (layout KxN) whose packed columns are bounded lines.
template <class TB>
std::vector<TB> bounded_b(std::mt19937& rng, int64_t k, int64_t n) {
  std::vector<TB> b(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < n; ++j) {
    const auto line = bounded_line(rng, k);
    for (int64_t t = 0; t < k; ++t) b[static_cast<size_t>(t * n + j)] = weight_from_packed<TB>(line[static_cast<size_t>(t)]);
  }
  return b;
}

// The fast GEMM on B (KxN) against the reference, int32 and requantized.
template <class TA, class TB>
void check_gemm(std::mt19937& rng, const detail::QGemmIsa& isa, int64_t m, const std::vector<TB>& b, int64_t k, int64_t n,
                bool want_bounded) {
  const auto a = extreme_activations<TA>(rng, static_cast<size_t>(m * k));
  const TA za = quant::testing::random_values<TA>(rng, 1)[0];
  const std::vector<TB> zb = quant::testing::random_values<TB>(rng, rng() % 2 ? 1 : static_cast<size_t>(n));
  QGemmArgs<TA, TB> args;
  args.m = m, args.n = n, args.k = k, args.a = a.data(), args.lda = k, args.a_zero_point = za;
  args.b = b.data(), args.ldb = n, args.b_layout = BLayout::KxN;
  args.b_zero_point = zb.data(), args.b_zero_point_count = static_cast<int64_t>(zb.size());
  std::vector<int32_t> want(static_cast<size_t>(m * n));
  args.c = want.data(), args.ldc = n;
  qgemm_reference(args);
  const PackedQB packed = PackedQB::pack(b.data(), n, BLayout::KxN, k, n, zb.data(), static_cast<int64_t>(zb.size()));
  INFO("isa=" << isa.name << " m=" << m << " n=" << n << " k=" << k);
  REQUIRE(packed.pairs_bounded() == want_bounded);
  for (int threads : {1, 2}) {
    std::vector<int32_t> got(want.size(), -7);
    QGemmOutput out;
    out.y = got.data(), out.ldy = n;
    qgemm_packed<TA>(m, a.data(), k, za, packed, nullptr, out, threads, isa);
    REQUIRE(got == want);
  }
  const Requantizer r = make_requantizer(RequantMode::Float, std::vector<float>{0.0007f}, 100);
  std::vector<uint8_t> want_y(want.size()), got_y(want.size(), 1);
  requantize<uint8_t>(want.data(), m, n, n, nullptr, r, 0, want_y.data(), n, 1);
  QGemmOutput out;
  out.requant = &r, out.type = detail::QOutType::U8, out.y = got_y.data(), out.ldy = n;
  qgemm_packed<TA>(m, a.data(), k, za, packed, nullptr, out, 1, isa);
  REQUIRE(got_y == want_y);
}

template <class TA, class TB>
void gemm_sweep(uint32_t seed) {
  std::mt19937 rng(seed);
  for (const detail::QGemmIsa* isa : detail::supported_qgemm_isas())
    for (int64_t k : {1, 2, 3, 5, 8, 31, 64, 257})
      for (int64_t n : {1, 17, 40})
        for (int64_t m : {1, 6}) {
          const std::vector<TB> b = bounded_b<TB>(rng, k, n);
          check_gemm<TA, TB>(rng, *isa, m, b, k, n, true);
          if (k < 4) continue;
          // One kernel pair over the bound by one (in the last column, the
          // last whole pair): not flagged, still exact.
          std::vector<TB> over = b;
          const int64_t t = (k - 2) / 2 * 2, j = n - 1;
          const bool positive = rng() % 2;
          over[static_cast<size_t>(t * n + j)] = weight_from_packed<TB>(positive ? 127 : -128);
          over[static_cast<size_t>((t + 1) * n + j)] = weight_from_packed<TB>(positive ? 2 : -1);
          check_gemm<TA, TB>(rng, *isa, m, over, k, n, false);
          // The same values across two kernel pairs (k odd, k + 1): still bounded.
          std::vector<TB> straddle = b;
          for (int64_t q = 0; q < 4; ++q) straddle[static_cast<size_t>(q * n + j)] = weight_from_packed<TB>(0);
          straddle[static_cast<size_t>(1 * n + j)] = weight_from_packed<TB>(127);
          straddle[static_cast<size_t>(2 * n + j)] = weight_from_packed<TB>(127);
          check_gemm<TA, TB>(rng, *isa, m, straddle, k, n, true);
        }
}

}  // namespace

namespace {

template <class TX, class TW>
void conv_sweep(uint32_t seed) {
  using quant::testing::ConvCase;
  const ConvCase cases[] = {
      {1, 3, 9, 1, {7, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},    // K = 27: odd, 3 rows padded to 4
      {1, 5, 7, 1, {6, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},    // pointwise, K = 5
      {1, 6, 4, 2, {5, 6}, {2, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}},    // groups, stride 2
      {2, 16, 24, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},  // K = 144, batch 2
      // 1x1 stride 2 on 7 x 7 (49 columns: a last panel of one column) and
      // 14 x 14 (196: four): the fused kernel's half-tile form
      {1, 12, 9, 1, {14, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 8, 6, 1, {28, 27}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      // Last panels of 2 and 3 columns (50 and 51 pixels), and on the direct
      // path (3x3 pad 1, channels in fours) of 2 and 1 (wide rows of 9 and 17
      // pixels): the narrow pairs kernel
      {1, 8, 6, 1, {5, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 8, 6, 1, {3, 17}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 8, 6, 1, {2, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 5, 1, {1, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  std::mt19937 rng(seed);
  for (const detail::QGemmIsa* isa : detail::supported_qgemm_isas())
    for (const ConvCase& c : cases) {
      const ConvGeometry g = quant::testing::geometry(c);
      const int64_t depth = g.in_channels / g.group * element_count(g.kernel);
      const auto x = extreme_activations<TX>(rng, static_cast<size_t>(g.batch * g.in_channels * element_count(g.in_spatial)));
      std::vector<TW> w(static_cast<size_t>(g.out_channels * depth));
      for (int64_t m = 0; m < g.out_channels; ++m) {
        const auto line = bounded_line(rng, depth);
        for (int64_t t = 0; t < depth; ++t)
          w[static_cast<size_t>(m * depth + t)] = weight_from_packed<TW>(line[static_cast<size_t>(t)]);
      }
      std::vector<TW> over = w;  // the last row's first pair one over the bound
      over[static_cast<size_t>((g.out_channels - 1) * depth)] = weight_from_packed<TW>(-128);
      over[static_cast<size_t>((g.out_channels - 1) * depth + 1)] = weight_from_packed<TW>(-1);
      // Bounded in ONNX Runtime's K order (tap major, channel minor), as a
      // target's pair_bound makes them: packed in that order when given the taps.
      const int64_t taps = element_count(g.kernel), channels = depth / taps;
      std::vector<TW> tap_major(w.size());
      for (int64_t m = 0; m < g.out_channels; ++m) {
        const auto line = bounded_line(rng, depth);
        for (int64_t ch = 0; ch < channels; ++ch)
          for (int64_t t = 0; t < taps; ++t)
            tap_major[static_cast<size_t>(m * depth + ch * taps + t)] =
                weight_from_packed<TW>(line[static_cast<size_t>(t * channels + ch)]);
      }
      const TX xzp = quant::testing::random_values<TX>(rng, 1)[0];
      const std::vector<TW> zp = quant::testing::random_values<TW>(rng, static_cast<size_t>(g.out_channels));
      const size_t out_size = static_cast<size_t>(g.batch * g.out_channels * element_count(g.out_spatial));
      std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
      for (const std::vector<TW>* weights : {&w, &over, &tap_major}) {
        QConvArgs<TX, TW> a;
        a.x = x.data(), a.x_zero_point = xzp, a.w = weights->data();
        a.w_zero_point = zp.data(), a.w_zero_point_count = g.out_channels;
        const bool reorder = weights == &tap_major;
        const PackedQConvWeights packed(weights->data(), g.out_channels, g.group, depth, zp.data(), g.out_channels, *isa,
                                        reorder ? taps : 1);
        INFO("isa=" << isa->name << " C=" << c.in_channels << " M=" << c.out_channels << " K=" << depth
                    << " over=" << (weights == &over) << " tap_major=" << reorder);
        if (reorder) {
          // An ISA with a pairs kernel reorders for the bound; the others
          // when channels come in fours (qconv_fast's direct path).
          const PackedQConvWeights natural(weights->data(), g.out_channels, g.group, depth, zp.data(), g.out_channels, *isa);
          const bool has_pairs = isa->a_signed_pairs != nullptr;
          const bool quads = taps > 1 && channels > 1 && channels % 4 == 0;
          REQUIRE(packed.k_tap_major() == (has_pairs ? !natural.pairs_bounded() : quads));
          REQUIRE(packed.pairs_bounded() == (has_pairs || packed.k_tap_major() || natural.pairs_bounded()));
          if (has_pairs && channels > 1 && taps > 1) CHECK(packed.k_tap_major());  // at the bound, natural pairs exceed it
        } else {
          REQUIRE(packed.pairs_bounded() == (weights == &w));
          REQUIRE_FALSE(packed.k_tap_major());
        }
        std::vector<int32_t> want(out_size), got(out_size, -7);
        qconv_s32(g, a, want.data(), workspace.data());
        for (int threads : {1, 2}) {
          qconv_fast<TX, int32_t>(g, x.data(), xzp, packed, nullptr, nullptr, got.data(), threads);
          REQUIRE(got == want);
        }
        const Requantizer r = make_requantizer(RequantMode::Float, std::vector<float>{0.0009f}, 90);
        std::vector<uint8_t> want_y(out_size), got_y(out_size, 1);
        qlinear_conv<TX, TW, uint8_t>(g, a, nullptr, r, want_y.data(), workspace.data());
        qconv_fast<TX, uint8_t>(g, x.data(), xzp, packed, nullptr, &r, got_y.data(), 1);
        REQUIRE(got_y == want_y);
        // No weight zero points, fused output stage: where the channels come
        // in fours, the direct path (qconv_fast.h), on the pairs kernel too.
        QConvArgs<TX, TW> a0 = a;
        a0.w_zero_point = nullptr, a0.w_zero_point_count = 0;
        const PackedQConvWeights packed0(weights->data(), g.out_channels, g.group, depth, static_cast<const TW*>(nullptr), 0, *isa,
                                         reorder ? taps : 1);
        qlinear_conv<TX, TW, uint8_t>(g, a0, nullptr, r, want_y.data(), workspace.data());
        for (int threads : {1, 2}) {
          std::fill(got_y.begin(), got_y.end(), uint8_t{1});
          qconv_fast<TX, uint8_t>(g, x.data(), xzp, packed0, nullptr, &r, got_y.data(), threads);
          REQUIRE(got_y == want_y);
        }
      }
    }
}

}  // namespace

TEST_CASE("qgemm_packed and qconv_fast on bounded weights match the reference, every type pair",
          "[kernels][qgemm_pairs]") {
  gemm_sweep<uint8_t, int8_t>(51), conv_sweep<uint8_t, int8_t>(61);
  gemm_sweep<uint8_t, uint8_t>(52), conv_sweep<uint8_t, uint8_t>(62);
  gemm_sweep<int8_t, int8_t>(53), conv_sweep<int8_t, int8_t>(63);
  gemm_sweep<int8_t, uint8_t>(54), conv_sweep<int8_t, uint8_t>(64);
}
