#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/gemm.h"

using quant::kernels::gemm_f32;

namespace {

// A = [1 2 3; 4 5 6], B = [7 8; 9 10; 11 12], A*B = [58 64; 139 154].
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kAt = {1, 4, 2, 5, 3, 6};  // A stored transposed, [3,2]
const std::vector<float> kB = {7, 8, 9, 10, 11, 12};
const std::vector<float> kBt = {7, 9, 11, 8, 10, 12};  // B stored transposed, [2,3]

}  // namespace

TEST_CASE("gemm_f32 all transpose combinations", "[kernels][gemm]") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      std::vector<float> y(4, -1.0f);
      gemm_f32(ta, tb, 2, 2, 3, 1.0f, (ta ? kAt : kA).data(), (tb ? kBt : kB).data(), 0.0f, nullptr, 0, 0, y.data());
      INFO("trans_a=" << ta << " trans_b=" << tb);
      CHECK(y == std::vector<float>{58, 64, 139, 154});
    }
  }
}

TEST_CASE("gemm_f32 alpha, beta and C broadcast", "[kernels][gemm]") {
  std::vector<float> y(4);
  SECTION("C is a row [1,N]") {
    const std::vector<float> c = {10, 20};
    gemm_f32(false, true, 2, 2, 3, 2.0f, kA.data(), kBt.data(), 0.5f, c.data(), 1, 2, y.data());
    CHECK(y == std::vector<float>{121, 138, 283, 318});
  }
  SECTION("C is a column [M,1]") {
    const std::vector<float> c = {1, 2};
    gemm_f32(true, false, 2, 2, 3, 1.0f, kAt.data(), kB.data(), 1.0f, c.data(), 2, 1, y.data());
    CHECK(y == std::vector<float>{59, 65, 141, 156});
  }
  SECTION("C is a scalar") {
    const float c = 100;
    gemm_f32(false, false, 2, 2, 3, 1.0f, kA.data(), kB.data(), -1.0f, &c, 1, 1, y.data());
    CHECK(y == std::vector<float>{-42, -36, 39, 54});
  }
  SECTION("C is full [M,N]") {
    const std::vector<float> c = {1, 2, 3, 4};
    gemm_f32(true, true, 2, 2, 3, 1.0f, kAt.data(), kBt.data(), 2.0f, c.data(), 2, 2, y.data());
    CHECK(y == std::vector<float>{60, 68, 145, 162});
  }
  SECTION("beta = 0 ignores C, even NaN") {
    const std::vector<float> c = {std::numeric_limits<float>::quiet_NaN(), 1, 1, 1};
    gemm_f32(false, false, 2, 2, 3, 1.0f, kA.data(), kB.data(), 0.0f, c.data(), 2, 2, y.data());
    CHECK(y == std::vector<float>{58, 64, 139, 154});
  }
  SECTION("K = 0 leaves beta * C") {
    const std::vector<float> c = {1, 2};
    gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 3.0f, c.data(), 1, 2, y.data());
    CHECK(y == std::vector<float>{3, 6, 3, 6});
  }
}

TEST_CASE("gemm_f32 matches a naive triple loop", "[kernels][gemm]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t M = 1 + trial % 5, N = 1 + (trial * 3) % 7, K = 1 + (trial * 5) % 9;
    const bool ta = trial & 1, tb = trial & 2;
    std::vector<float> A(M * K), B(K * N), C(N), y(M * N);
    for (float& v : A) v = dist(rng);
    for (float& v : B) v = dist(rng);
    for (float& v : C) v = dist(rng);
    gemm_f32(ta, tb, M, N, K, 0.75f, A.data(), B.data(), -1.25f, C.data(), 1, N, y.data());
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double a = ta ? A[k * M + i] : A[i * K + k];
          const double b = tb ? B[j * K + k] : B[k * N + j];
          acc += a * b;
        }
        const double expected = 0.75 * acc - 1.25 * C[j];
        CHECK(std::abs(y[i * N + j] - expected) < 1e-5);
      }
    }
  }
}
