// The packed GEMM (every micro-kernel this CPU runs) against the naive
// gemm_f32_reference over swept shapes, transposes, packing modes, epilogues
// and thread counts.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "libquant/kernels/gemm.h"
#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/gemm_ukernel.h"
#include "tests/kernels/random_ints.h"

using namespace quant::kernels;

namespace {

using quant::testing::random_floats;

// |got - want| within a float tolerance scaled by the dot-product length.
void check_close(const std::vector<float>& got, const std::vector<float>& want, int64_t K, const std::string& what) {
  REQUIRE(got.size() == want.size());
  const float tol = 1e-5f * static_cast<float>(K + 4);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1.0f + std::abs(want[i])))) ++bad;
  INFO(what);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gemm_f32_packed matches the reference for every ISA, shape and packing", "[kernels][gemm]") {
  std::mt19937 rng(11);
  // Shapes straddle the tile sizes (4x8, 6x16, 8x32) and the K/N blocks; the
  // row counts leave every remainder 1..7 of 8 (the AVX-512 kernel has one
  // variant per number of valid rows).
  // K = 1 and 2, N = 49 (a 7x7 map: a last panel of one column), M past
  // one block of A panels (the AVX2 loop keeps 16 panels of 6 rows per
  // block) and K past two depth blocks.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1},    {1, 1000, 64}, {7, 5, 3},   {6, 16, 9},  {8, 32, 257}, {13, 33, 31}, {64, 49, 300},
      {17, 530, 12}, {3, 7, 600},  {40, 1, 5},  {2, 3, 0},   {12, 45, 70}, {5, 9, 1},    {11, 23, 2},
      {19, 49, 64}, {101, 40, 33}, {25, 7, 520}, {1, 17, 5},
      // Last panels of 2, 3 and 4 columns (the AVX2 column tail, which runs
      // up to 4 A panels at once: row panel counts off a multiple of 4).
      {29, 18, 300}, {37, 35, 40}, {23, 20, 270}, {6, 2, 5}, {61, 52, 19},
      // Column blocks narrower than 512 where the L2 is small (the suite runs
      // again under QTOOL_L2_KB=256: 128 columns for K >= 256, 240 or 224
      // for K = 130; gemm_block_columns).
      {9, 300, 260}, {14, 700, 130}};
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    for (const auto& [M, N, K] : shapes) {
      for (int mode = 0; mode < 4; ++mode) {
        const bool ta = mode & 1, tb = mode & 2;
        const std::vector<float> A = random_floats(size_t(M * K), rng), B = random_floats(size_t(K * N), rng);
        const std::vector<float> row_bias = random_floats(size_t(M), rng), col_bias = random_floats(size_t(N), rng);
        const MatrixView av = ta ? MatrixView{A.data(), 1, M} : MatrixView{A.data(), K, 1};
        const MatrixView bv = tb ? MatrixView{B.data(), 1, K} : MatrixView{B.data(), N, 1};
        std::vector<float> want(size_t(M * N));
        gemm_f32_reference(ta, tb, M, N, K, 1.0f, A.data(), B.data(), 0.0f, nullptr, 0, 0, want.data());
        const std::string name = std::string(isa->name) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                                 " K=" + std::to_string(K) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);

        // Plain views, both operands packed on the fly.
        std::vector<float> got(size_t(M * N), 99.0f);
        gemm_f32_packed(M, N, K, GemmA{nullptr, av}, GemmB{nullptr, bv, nullptr}, got.data(), N, {}, 1, *isa);
        check_close(got, want, K, name + " views");

        // Both prepacked.
        const PackedMatrix pa = PackedMatrix::pack_a(av, M, K, *isa), pb = PackedMatrix::pack_b(bv, K, N, *isa);
        std::fill(got.begin(), got.end(), 99.0f);
        gemm_f32_packed(M, N, K, GemmA{&pa, {}}, GemmB{&pb, {}, nullptr}, got.data(), N, {}, 1, *isa);
        check_close(got, want, K, name + " prepacked");

        // Epilogue: alpha, accumulate onto C, row and column bias, a residual
        // (row stride N + 3), clamp.
        const std::vector<float> c0 = random_floats(size_t(M * N), rng);
        const std::vector<float> residual = random_floats(size_t(M * (N + 3)), rng);
        std::vector<float> want_ep(size_t(M * N));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const size_t e = size_t(i * N + j);
            want_ep[e] = std::clamp(c0[e] + 0.5f * want[e] + row_bias[size_t(i)] + col_bias[size_t(j)] +
                                        residual[size_t(i * (N + 3) + j)],
                                    -0.4f, 0.6f);
          }
        GemmEpilogue ep;
        ep.alpha = 0.5f;
        ep.accumulate = true;
        ep.row_bias = row_bias.data();
        ep.col_bias = col_bias.data();
        ep.residual = residual.data();
        ep.ldr = N + 3;
        ep.clamp = true;
        ep.lo = -0.4f;
        ep.hi = 0.6f;
        got = c0;
        gemm_f32_packed(M, N, K, GemmA{&pa, {}}, GemmB{nullptr, bv, nullptr}, got.data(), N, ep, 1, *isa);
        check_close(got, want_ep, K, name + " epilogue");
        // A read from its view takes no column tail: the same bits.
        std::vector<float> got_view = c0;
        gemm_f32_packed(M, N, K, GemmA{nullptr, av}, GemmB{nullptr, bv, nullptr}, got_view.data(), N, ep, 1, *isa);
        INFO(name << " epilogue, A packed vs its view");
        CHECK(got_view == got);

        // Threads: the same bits as one thread (work is never split along K).
        std::vector<float> one(size_t(M * N)), many(size_t(M * N));
        gemm_f32_packed(M, N, K, GemmA{nullptr, av}, GemmB{&pb, {}, nullptr}, one.data(), N, {}, 1, *isa);
        for (int threads : {2, 3, 8}) {
          gemm_f32_packed(M, N, K, GemmA{nullptr, av}, GemmB{&pb, {}, nullptr}, many.data(), N, {}, threads, *isa);
          INFO(name << " threads " << threads);
          CHECK(many == one);
          // B packed on the fly (shared by the row parts of a small-N split).
          std::fill(many.begin(), many.end(), 99.0f);
          gemm_f32_packed(M, N, K, GemmA{&pa, {}}, GemmB{nullptr, bv, nullptr}, many.data(), N, {}, threads, *isa);
          CHECK(many == one);
          // Rows split on request, whatever the shape.
          std::fill(many.begin(), many.end(), 99.0f);
          gemm_f32_packed(M, N, K, GemmA{&pa, {}}, GemmB{nullptr, bv, nullptr}, many.data(), N, {}, threads, *isa,
                          GemmSplit::Rows);
          CHECK(many == one);
        }
      }
    }
  }
}

TEST_CASE("gemm column blocks fill half the L2 in whole panels, 128 to 512 columns", "[kernels][gemm]") {
  constexpr int64_t KiB = 1024;
  CHECK(gemm_block_columns(256, 16, 2048 * KiB) == 512);  // this project's hosts: unchanged
  CHECK(gemm_block_columns(256, 32, 1024 * KiB) == 512);  // 512 KB of B in a 1 MB L2
  CHECK(gemm_block_columns(256, 16, 512 * KiB) == 256);   // AMD Zen 1-3
  CHECK(gemm_block_columns(256, 16, 256 * KiB) == 128);   // Intel client cores before Ice Lake
  CHECK(gemm_block_columns(256, 32, 64 * KiB) == 128);    // never under 128
  CHECK(gemm_block_columns(16, 16, 256 * KiB) == 512);    // a short depth keeps wide blocks
  CHECK(gemm_block_columns(130, 16, 256 * KiB) == 240);   // 252 columns fit: whole panels of 16
  CHECK(gemm_block_columns(130, 32, 256 * KiB) == 224);
  CHECK(gemm_block_columns(0, 16, 256 * KiB) == 512);
}

TEST_CASE("gemm micro-kernels compute every edge tile and leave the rest of C alone", "[kernels][gemm]") {
  // Each kernel on one tile with every count of valid rows and columns (the
  // AVX2 and AVX-512 kernels have a variant per row count and per number of
  // vectors), K = 1, 2 and 7, with the whole epilogue on the last block, and
  // C wider than the tile: what lies past the valid part must stay.
  std::mt19937 rng(19);
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    for (int64_t kc : {1, 2, 7}) {
      const std::vector<float> a = random_floats(size_t(kc * isa->mr), rng), b = random_floats(size_t(kc * isa->nr), rng);
      const std::vector<float> row_bias = random_floats(size_t(isa->mr), rng), col_bias = random_floats(size_t(isa->nr), rng);
      const std::vector<float> residual = random_floats(size_t(isa->mr * isa->nr), rng);
      for (int m_valid = 1; m_valid <= isa->mr; ++m_valid) {
        for (int n_valid = 1; n_valid <= isa->nr; ++n_valid) {
          const int64_t ldc = isa->nr + 5;
          std::vector<float> c(size_t(isa->mr * ldc), 3.0f);
          detail::MicroEpilogue ep;
          ep.alpha = 2.0f;
          ep.accumulate = true;
          ep.row_bias = row_bias.data();
          ep.col_bias = col_bias.data();
          ep.residual = residual.data();
          ep.ldr = isa->nr;
          ep.clamp = true;
          ep.lo = -1.0f;
          ep.hi = 1.0f;
          isa->kernel(kc, a.data(), b.data(), isa->nr, c.data(), ldc, m_valid, n_valid, ep);
          size_t bad = 0;
          for (int i = 0; i < isa->mr; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              float want = 3.0f;
              if (i < m_valid && j < n_valid) {
                float acc = 0.0f;
                for (int64_t k = 0; k < kc; ++k) acc += a[size_t(k * isa->mr + i)] * b[size_t(k * isa->nr + j)];
                want = std::clamp(2.0f * acc + 3.0f + row_bias[size_t(i)] + col_bias[size_t(j)] +
                                      residual[size_t(i * isa->nr + j)],
                                  -1.0f, 1.0f);
              }
              if (!(std::abs(c[size_t(i * ldc + j)] - want) <= 1e-5f * float(kc + 4))) ++bad;
            }
          INFO(isa->name << " kc=" << kc << " m_valid=" << m_valid << " n_valid=" << n_valid);
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("a run kernel has its tile kernel's bits, tile after tile", "[kernels][gemm]") {
  // GemmIsa::kernel_run against `kernel` called per tile, whole row panels
  // and partial ones (the last of M, whose rows past m_valid C must keep):
  // B in place (a row stride wider than the run, the run's tiles NR columns
  // apart, as a 1x1 conv's input planes) and packed (panels kc x NR one
  // after the other), depths on both sides of the AVX-512 kernel's B
  // prefetch distance (16 rows) and of a pair of k, with and without each
  // epilogue step that moves along the run (column bias, residual) and C
  // accumulated.
  std::mt19937 rng(29);
  int runs = 0;
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    if (!isa->kernel_run) continue;
    const int mr = isa->mr, nr = isa->nr;
    for (int64_t kc : {1, 5, 16, 17, 40}) {
      for (int64_t tiles : {1, 3}) {
        for (const bool in_place : {true, false}) {
          const int64_t n = tiles * nr, ldb = in_place ? n + 7 : nr, b_step = in_place ? nr : kc * nr;
          const int64_t ldc = n + 3;
          const std::vector<float> a = random_floats(size_t(kc * mr), rng);
          const std::vector<float> b = random_floats(size_t(in_place ? kc * ldb : tiles * kc * nr), rng);
          const std::vector<float> col_bias = random_floats(size_t(n), rng), row_bias = random_floats(size_t(mr), rng);
          const std::vector<float> residual = random_floats(size_t(mr * (n + 2)), rng);
          const std::vector<float> c0 = random_floats(size_t(mr * ldc), rng);
          for (unsigned steps = 0; steps < 8; ++steps) {
            detail::MicroEpilogue ep;
            ep.accumulate = steps & 1;
            ep.row_bias = row_bias.data();
            ep.col_bias = steps & 2 ? col_bias.data() : nullptr;
            ep.residual = steps & 4 ? residual.data() : nullptr;
            ep.ldr = n + 2;
            ep.clamp = true;
            ep.lo = -0.5f;
            ep.hi = 0.7f;
            for (int m_valid : {mr, mr - 1, 1}) {
              std::vector<float> got = c0, want = c0;
              isa->kernel_run(kc, a.data(), b.data(), ldb, b_step, got.data(), ldc, m_valid, tiles, ep);
              for (int64_t t = 0; t < tiles; ++t) {
                detail::MicroEpilogue et = ep;
                if (et.col_bias) et.col_bias += t * nr;
                if (et.residual) et.residual += t * nr;
                isa->kernel(kc, a.data(), b.data() + t * b_step, ldb, want.data() + t * nr, ldc, m_valid, nr, et);
              }
              INFO(isa->name << " kc=" << kc << " tiles=" << tiles << " in_place=" << in_place << " steps=" << steps
                             << " m_valid=" << m_valid);
              CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
              ++runs;
            }
          }
        }
      }
    }
  }
  // The AVX2 and AVX-512 kernels have run kernels where this CPU runs them.
  if (detail::supported_gemm_isas().size() > 1) CHECK(runs > 0);
}

TEST_CASE("every micro-kernel's epilogue has store_tile_scalar's bits, for each set of its steps", "[kernels][gemm]") {
  // K = 1 and A = 1: the product is B exactly, so the tile's bits depend on
  // the epilogue alone, which must be store_tile_scalar's step for step
  // (the SIMD kernels run it step by step over the tile, and leave out
  // min(+inf, x)). B holds NaN, infinities and values past the clamp.
  std::mt19937 rng(23);
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    const int mr = isa->mr, nr = isa->nr;
    const int64_t ldc = nr + 3;
    const std::vector<float> a(size_t(mr), 1.0f);
    std::vector<float> b = random_floats(size_t(nr), rng);
    for (float& x : b) x *= 4.0f;
    b[0] = NAN, b[1] = INFINITY, b[2] = -INFINITY;
    const std::vector<float> row_bias = random_floats(size_t(mr), rng), col_bias = random_floats(size_t(nr), rng);
    const std::vector<float> residual = random_floats(size_t(mr * nr), rng), c0 = random_floats(size_t(mr * ldc), rng);
    std::vector<float> tile(size_t(mr * nr));
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < nr; ++j) tile[size_t(i * nr + j)] = b[size_t(j)];
    for (unsigned steps = 0; steps < 256; ++steps) {
      detail::MicroEpilogue ep;
      ep.alpha = steps & 1 ? 0.75f : 1.0f;
      ep.accumulate = steps & 2;
      ep.row_bias = steps & 4 ? row_bias.data() : nullptr;
      ep.col_bias = steps & 8 ? col_bias.data() : nullptr;
      ep.residual = steps & 16 ? residual.data() : nullptr;
      ep.ldr = nr;
      ep.clamp = steps & 32;
      ep.lo = -0.5f;
      ep.hi = steps & 64 ? INFINITY : 0.5f;
      ep.last = !(steps & 128);
      for (int m_valid : {mr, 1}) {
        for (int n_valid : {nr, nr / 2, 3}) {
          std::vector<float> got = c0, want = c0;
          isa->kernel(1, a.data(), b.data(), nr, got.data(), ldc, m_valid, n_valid, ep);
          detail::store_tile_scalar(tile.data(), nr, want.data(), ldc, m_valid, n_valid, ep);
          size_t bad = 0;
          for (size_t e = 0; e < got.size(); ++e)
            if (std::memcmp(&got[e], &want[e], sizeof(float)) != 0 && !(std::isnan(got[e]) && std::isnan(want[e])))
              ++bad;
          INFO(isa->name << " steps=" << steps << " m_valid=" << m_valid << " n_valid=" << n_valid);
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("gemm_f32_packed writes only its tile of a wider C", "[kernels][gemm]") {
  // ldc > N: the columns past N (another tensor's data) stay untouched.
  std::mt19937 rng(5);
  const int64_t M = 9, N = 20, K = 7, ldc = 37;
  const std::vector<float> A = random_floats(size_t(M * K), rng), B = random_floats(size_t(K * N), rng);
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    std::vector<float> c(size_t(M * ldc), -7.0f);
    gemm_f32_packed(M, N, K, GemmA{nullptr, {A.data(), K, 1}}, GemmB{nullptr, {B.data(), N, 1}, nullptr}, c.data(), ldc, {}, 2,
                    *isa);
    std::vector<float> want(size_t(M * N));
    gemm_f32_reference(false, false, M, N, K, 1.0f, A.data(), B.data(), 0.0f, nullptr, 0, 0, want.data());
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const float v = c[size_t(i * ldc + j)];
        if (j < N)
          CHECK(std::abs(v - want[size_t(i * N + j)]) < 1e-4f);
        else
          CHECK(v == -7.0f);
      }
    }
  }
}

TEST_CASE("gemm_f32_packed lets NaN through when no clamp is asked", "[kernels][gemm]") {
  const std::vector<float> A = {NAN, 1.0f}, B = {1.0f, 2.0f};
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    std::vector<float> c(2);
    gemm_f32_packed(2, 1, 1, GemmA{nullptr, {A.data(), 1, 1}}, GemmB{nullptr, {B.data(), 1, 1}, nullptr}, c.data(), 1, {}, 1,
                    *isa);
    CHECK(std::isnan(c[0]));
    CHECK(c[1] == 1.0f);
  }
}

TEST_CASE("gemm_f32_packed's fused clamp lets NaN through, as clamp_f32", "[kernels][gemm]") {
  // Full 8x32 tiles and partial ones: every row of A is NaN or 1.
  for (const detail::GemmIsa* isa : detail::supported_gemm_isas()) {
    for (int64_t M : {8, 3}) {
      for (int64_t N : {32, 5}) {
        std::vector<float> A(size_t(M), 1.0f), B(size_t(N), 2.0f), c(size_t(M * N));
        A[1] = NAN;
        GemmEpilogue ep;
        ep.clamp = true;
        ep.lo = 0.0f;
        ep.hi = 1.5f;
        gemm_f32_packed(M, N, 1, GemmA{nullptr, {A.data(), 1, 1}}, GemmB{nullptr, {B.data(), N, 1}, nullptr}, c.data(), N,
                        ep, 1, *isa);
        INFO(isa->name << " M=" << M << " N=" << N);
        CHECK(std::isnan(c[size_t(N)]));
        CHECK(c[0] == 1.5f);
      }
    }
  }
}
