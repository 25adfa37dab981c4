#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/qgemm.h"

using quant::kernels::BLayout;
using quant::kernels::qgemm;
using quant::kernels::qgemm_reference;
using quant::kernels::QGemmArgs;

namespace {

// The definition, written independently of the library: int64 sums of
// (a - za)(b - zb), truncated to int32 modulo 2^32.
template <class TA, class TB>
std::vector<int32_t> naive_qgemm(int64_t m, int64_t n, int64_t k, const std::vector<TA>& a, int32_t za,
                                 const std::vector<TB>& b_kxn, const std::vector<int32_t>& zb) {
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      const int64_t z = zb.empty() ? 0 : zb[zb.size() == 1 ? 0 : static_cast<size_t>(j)];
      for (int64_t p = 0; p < k; ++p) s += (int64_t{a[i * k + p]} - za) * (int64_t{b_kxn[p * n + j]} - z);
      c[i * n + j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(s)));
    }
  }
  return c;
}

template <class T>
std::vector<T> random_values(std::mt19937& rng, size_t count, bool extremes_only) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(count);
  for (auto& x : v) {
    x = static_cast<T>(d(rng));
    if (extremes_only) x = (x & 1) ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
  }
  return v;
}

// Runs qgemm and qgemm_reference on padded buffers (leading dimensions larger
// than the matrix) for both B layouts and checks both against naive_qgemm.
template <class TA, class TB>
void check_case(std::mt19937& rng, int64_t m, int64_t n, int64_t k, TA za, std::vector<TB> zb, bool extremes) {
  const int64_t pad = 3;
  const std::vector<TA> a = random_values<TA>(rng, static_cast<size_t>(m * k), extremes);
  const std::vector<TB> b = random_values<TB>(rng, static_cast<size_t>(k * n), extremes);
  std::vector<int32_t> zb32(zb.begin(), zb.end());
  const std::vector<int32_t> want = naive_qgemm(m, n, k, a, za, b, zb32);

  std::vector<TA> a_pad(static_cast<size_t>(m * (k + pad)), TA{7});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) a_pad[i * (k + pad) + p] = a[i * k + p];
  for (BLayout layout : {BLayout::KxN, BLayout::NxK}) {
    const int64_t ldb = layout == BLayout::KxN ? n + pad : k + pad;
    std::vector<TB> b_pad(static_cast<size_t>(layout == BLayout::KxN ? k * ldb : n * ldb), TB{5});
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        b_pad[layout == BLayout::KxN ? p * ldb + j : j * ldb + p] = b[p * n + j];
    for (bool reference : {false, true}) {
      const int64_t ldc = n + pad;
      std::vector<int32_t> c(static_cast<size_t>(m * ldc), -99);
      QGemmArgs<TA, TB> args;
      args.m = m, args.n = n, args.k = k;
      args.a = a_pad.data(), args.lda = k + pad, args.a_zero_point = za;
      args.b = b_pad.data(), args.ldb = ldb, args.b_layout = layout;
      args.b_zero_point = zb.empty() ? nullptr : zb.data();
      args.b_zero_point_count = static_cast<int64_t>(zb.size());
      args.c = c.data(), args.ldc = ldc;
      if (reference) qgemm_reference(args); else qgemm(args);
      std::vector<int32_t> got;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) got.push_back(c[i * ldc + j]);
        for (int64_t j = n; j < ldc; ++j) REQUIRE(c[i * ldc + j] == -99);  // padding untouched
      }
      INFO("m=" << m << " n=" << n << " k=" << k << " za=" << int(za) << " zb count=" << zb.size()
                << " layout=" << (layout == BLayout::KxN ? "KxN" : "NxK") << " reference=" << reference);
      REQUIRE(got == want);
    }
  }
}

template <class TA, class TB>
void sweep() {
  std::mt19937 rng(1234);
  const TA a_lo = std::numeric_limits<TA>::min(), a_hi = std::numeric_limits<TA>::max();
  const TB b_lo = std::numeric_limits<TB>::min(), b_hi = std::numeric_limits<TB>::max();
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {3, 4, 0}, {4, 16, 33},
                                                     {17, 5, 64}, {2, 3, 300}, {0, 4, 4}, {6, 0, 2}};
  for (const auto& s : shapes) {
    for (TA za : {TA{0}, a_lo, a_hi, TA(37)}) {
      std::vector<std::vector<TB>> zbs = {{}, {TB{0}}, {b_lo}, {b_hi}};
      std::vector<TB> per_column;
      for (int64_t j = 0; j < s[1]; ++j) per_column.push_back(j % 3 == 0 ? b_lo : (j % 3 == 1 ? b_hi : TB(j * 11)));
      zbs.push_back(per_column);
      for (const auto& zb : zbs)
        for (bool extremes : {false, true}) check_case<TA, TB>(rng, s[0], s[1], s[2], za, zb, extremes);
    }
  }
}

}  // namespace

TEST_CASE("qgemm u8 x s8 equals the naive definition", "[kernels][qgemm]") { sweep<uint8_t, int8_t>(); }
TEST_CASE("qgemm u8 x u8 equals the naive definition", "[kernels][qgemm]") { sweep<uint8_t, uint8_t>(); }
TEST_CASE("qgemm s8 x s8 equals the naive definition", "[kernels][qgemm]") { sweep<int8_t, int8_t>(); }
TEST_CASE("qgemm s8 x u8 equals the naive definition", "[kernels][qgemm]") { sweep<int8_t, uint8_t>(); }

TEST_CASE("qgemm small example by hand", "[kernels][qgemm]") {
  // A = [[130, 128], [127, 255]] with za = 128 -> [[2, 0], [-1, 127]];
  // B = [[1, -2], [3, 4]] with per-column zb = [1, -2] -> [[0, 0], [2, 6]].
  const std::vector<uint8_t> a = {130, 128, 127, 255};
  const std::vector<int8_t> b = {1, -2, 3, 4};
  const std::vector<int8_t> zb = {1, -2};
  std::vector<int32_t> c(4);
  QGemmArgs<uint8_t, int8_t> args;
  args.m = 2, args.n = 2, args.k = 2;
  args.a = a.data(), args.lda = 2, args.a_zero_point = 128;
  args.b = b.data(), args.ldb = 2, args.b_zero_point = zb.data(), args.b_zero_point_count = 2;
  args.c = c.data(), args.ldc = 2;
  qgemm(args);
  CHECK(c == std::vector<int32_t>{0, 0, 254, 762});
}

TEST_CASE("qgemm wraps modulo 2^32 beyond the int32 range", "[kernels][qgemm]") {
  // 40000 * 255 * 255 = 2601000000 > INT32_MAX: int32 accumulation wraps.
  const int64_t k = 40000;
  const std::vector<uint8_t> a(static_cast<size_t>(k), 255);
  const std::vector<uint8_t> b(static_cast<size_t>(k), 0);
  const uint8_t zb = 255;
  int32_t c = 0;
  QGemmArgs<uint8_t, uint8_t> args;
  args.m = 1, args.n = 1, args.k = k;
  args.a = a.data(), args.lda = k, args.a_zero_point = 0;
  args.b = b.data(), args.ldb = 1, args.b_zero_point = &zb, args.b_zero_point_count = 1;
  args.c = &c, args.ldc = 1;
  qgemm(args);
  const int64_t exact = -int64_t{2601000000};
  CHECK(c == static_cast<int32_t>(exact + (int64_t{1} << 32)));
}
