#include <catch2/catch.hpp>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/matmul.h"
#include "libquant/kernels/threadpool.h"
#include "tests/kernels/random_ints.h"

using quant::kernels::Dims;
using quant::kernels::matmul_f32;
using quant::kernels::matmul_output_shape;

TEST_CASE("matmul_output_shape with 1-D promotion and batch broadcasting", "[kernels][matmul]") {
  CHECK(matmul_output_shape(Dims{3}, Dims{3}) == Dims{});
  CHECK(matmul_output_shape(Dims{2, 3}, Dims{3}) == Dims{2});
  CHECK(matmul_output_shape(Dims{3}, Dims{3, 4}) == Dims{4});
  CHECK(matmul_output_shape(Dims{3}, Dims{5, 3, 4}) == Dims{5, 4});
  CHECK(matmul_output_shape(Dims{5, 2, 3}, Dims{3}) == Dims{5, 2});
  CHECK(matmul_output_shape(Dims{5, 2, 3}, Dims{3, 4}) == Dims{5, 2, 4});
  CHECK(matmul_output_shape(Dims{2, 1, 2, 3}, Dims{3, 3, 4}) == Dims{2, 3, 2, 4});
  CHECK_FALSE(matmul_output_shape(Dims{2, 3}, Dims{4, 5}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{}, Dims{3}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{2, 2, 3}, Dims{3, 3, 4}).has_value());
  CHECK_FALSE(matmul_output_shape(Dims{3}, Dims{4}).has_value());
}

TEST_CASE("matmul_f32 1-D promotion", "[kernels][matmul]") {
  const std::vector<float> A = {1, 2, 3, 4, 5, 6};
  const std::vector<float> B = {7, 8, 9, 10, 11, 12};
  SECTION("vector . vector is a scalar") {
    const std::vector<float> u = {1, 2, 3}, v = {4, 5, 6};
    float y = 0;
    matmul_f32(u.data(), Dims{3}, v.data(), Dims{3}, &y);
    CHECK(y == 32.0f);
  }
  SECTION("matrix x vector") {
    const std::vector<float> v = {1, 0, -1};
    std::vector<float> y(2);
    matmul_f32(A.data(), Dims{2, 3}, v.data(), Dims{3}, y.data());
    CHECK(y == std::vector<float>{-2, -2});
  }
  SECTION("vector x matrix") {
    const std::vector<float> v = {1, 1, 1};
    std::vector<float> y(2);
    matmul_f32(v.data(), Dims{3}, B.data(), Dims{3, 2}, y.data());
    CHECK(y == std::vector<float>{27, 30});
  }
  SECTION("vector x batched matrix") {
    const std::vector<float> v = {1, 2};
    const std::vector<float> b = {1, 0, 0, 1, 2, 3, 4, 5};  // [2,2,2]
    std::vector<float> y(4);
    matmul_f32(v.data(), Dims{2}, b.data(), Dims{2, 2, 2}, y.data());
    CHECK(y == std::vector<float>{1, 2, 10, 13});
  }
}

TEST_CASE("matmul_f32 broadcasts batch dimensions", "[kernels][matmul]") {
  // A [2,1,2,2], B [3,2,2] -> Y [2,3,2,2]
  std::vector<float> A(8), B(12);
  for (int i = 0; i < 8; ++i) A[i] = float(i + 1);
  for (int i = 0; i < 12; ++i) B[i] = float((i % 5) - 2);
  std::vector<float> y(24, -100.0f);
  matmul_f32(A.data(), Dims{2, 1, 2, 2}, B.data(), Dims{3, 2, 2}, y.data());
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          float acc = 0;
          for (int k = 0; k < 2; ++k) acc += A[a * 4 + i * 2 + k] * B[b * 4 + k * 2 + j];
          CHECK(y[((a * 3 + b) * 2 + i) * 2 + j] == acc);
        }
      }
    }
  }
  // Hand check: batch (1, 2): A[1] = [5 6; 7 8], B[2] = [1 2; -2 -1] -> [-7 4; -9 6].
  CHECK(y[((1 * 3 + 2) * 2 + 0) * 2 + 0] == -7.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 0) * 2 + 1] == 4.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 1) * 2 + 0] == -9.0f);
  CHECK(y[((1 * 3 + 2) * 2 + 1) * 2 + 1] == 6.0f);
}

namespace {

using quant::testing::random_floats;

// One GEMM per output batch, one thread each: what matmul_f32 computed
// before it folded or split batches.
std::vector<float> per_batch(const std::vector<float>& a, int64_t a_batches, const std::vector<float>& b,
                             int64_t b_batches, int64_t batches, int64_t m, int64_t n, int64_t k) {
  using namespace quant::kernels;
  std::vector<float> y(static_cast<size_t>(batches * m * n));
  for (int64_t i = 0; i < batches; ++i)
    gemm_f32_packed(m, n, k, GemmA{nullptr, MatrixView{a.data() + (a_batches == 1 ? 0 : i) * m * k, k, 1}},
                    GemmB{nullptr, MatrixView{b.data() + (b_batches == 1 ? 0 : i) * k * n, n, 1}, nullptr},
                    y.data() + i * m * n, n, {}, 1);
  return y;
}

}  // namespace

TEST_CASE("matmul_f32 with one B for every batch is one GEMM of the batches' rows, the same bits", "[kernels][matmul]") {
  // x @ W shapes: [batch, tokens, K] x [K, N], also with B's batch dims of 1.
  std::mt19937 rng(21);
  for (const auto& [batches, m, n, k] : std::vector<std::array<int64_t, 4>>{{16, 1, 192, 64}, {3, 7, 33, 300},
                                                                            {2, 16, 128, 64}, {5, 9, 1000, 20}}) {
    const auto a = random_floats(static_cast<size_t>(batches * m * k), rng);
    const auto b = random_floats(static_cast<size_t>(k * n), rng);
    const auto want = per_batch(a, batches, b, 1, batches, m, n, k);
    for (int threads : {1, 2, 3}) {
      for (const Dims& b_shape : {Dims{k, n}, Dims{1, k, n}}) {
        std::vector<float> y(want.size(), 99.0f);
        matmul_f32(a.data(), Dims{batches, m, k}, b.data(), b_shape, y.data(), threads);
        INFO("batches " << batches << " m " << m << " n " << n << " k " << k << " threads " << threads
                        << " B rank " << b_shape.size());
        CHECK(y == want);
      }
    }
  }
}

TEST_CASE("matmul_f32 splits whole batches over the threads; small products stay on the caller", "[kernels][matmul]") {
  using quant::kernels::pool_counters;
  std::mt19937 rng(22);
  struct Case {
    int64_t batches, m, n, k;
    int64_t jobs;           // pool jobs on 2 threads
    int64_t a_batches = 0;  // 1: A broadcast over B's batches (else one A per batch)
  };
  // 8 products of 64^3 = 262144 multiply-adds: one job of whole batches (a
  // job per batch before); 4 heads of 16 x 16 x 16 (attention on 16 tokens):
  // none, on the caller alone; 2 batches of 128 x 64 x 256 on 2 threads:
  // one job, a batch each; one A broadcast over 6 batches of B.
  for (const Case& c : {Case{8, 64, 64, 64, 1}, Case{4, 16, 16, 16, 0}, Case{2, 128, 64, 256, 1},
                        Case{6, 32, 96, 128, 1, 1}}) {
    const int64_t a_batches = c.a_batches ? c.a_batches : c.batches;
    const auto a = random_floats(static_cast<size_t>(a_batches * c.m * c.k), rng);
    const auto b = random_floats(static_cast<size_t>(c.batches * c.k * c.n), rng);
    const auto want = per_batch(a, a_batches, b, c.batches, c.batches, c.m, c.n, c.k);
    std::vector<float> y(want.size(), 99.0f);
    const int64_t before = pool_counters().jobs;
    matmul_f32(a.data(), Dims{a_batches, c.m, c.k}, b.data(), Dims{c.batches, c.k, c.n}, y.data(), 2);
    INFO("batches " << c.batches << " of " << c.m << " x " << c.n << " x " << c.k);
    CHECK(pool_counters().jobs - before == c.jobs);
    CHECK(y == want);
  }
}
