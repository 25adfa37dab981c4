// kernels::einsum against a plain batched matrix product.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "libquant/kernels/einsum.h"

TEST_CASE("einsum batch matmul equals the plain product", "[kernels][einsum]") {
  const int64_t B = 2, M = 3, K = 4, N = 2;
  std::vector<float> a(B * M * K), b(B * K * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2;
  std::string error;
  auto plan = quant::kernels::plan_einsum("bmk,bkn->bmn", {{B, M, K}, {B, K, N}}, &error);
  REQUIRE(plan);
  CHECK(plan->output_shape == std::vector<int64_t>{B, M, N});
  std::vector<float> y(B * M * N);
  const float* ops[] = {a.data(), b.data()};
  quant::kernels::einsum<float>(*plan, ops, y.data());
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float want = 0;
        for (int64_t k = 0; k < K; ++k) want += a[(bi * M + m) * K + k] * b[(bi * K + k) * N + n];
        CHECK(y[(bi * M + m) * N + n] == want);
      }
  CHECK_FALSE(quant::kernels::plan_einsum("ij,jk", {{2, 3}}, &error));
  CHECK_THAT(error, Catch::Contains("2 terms for 1 inputs"));
}
