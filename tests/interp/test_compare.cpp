#include <catch2/catch.hpp>

#include <cmath>

#include "libquant/interp/compare.h"

using quant::Tensor;

TEST_CASE("SNR, cosine and abs errors on known values", "[interp][compare]") {
  quant::interp::ErrorStats s;
  Tensor ref = Tensor::from_vector<float>({4}, {1, -1, 1, -1});
  Tensor tst = Tensor::from_vector<float>({4}, {1.1f, -0.9f, 1.1f, -0.9f});
  REQUIRE(s.add(ref, tst).is_ok());
  // signal 4, noise 4 * 0.01 -> 10 log10(100) = 20 dB.
  CHECK(s.snr_db() == Approx(20.0).epsilon(1e-4));
  CHECK(s.max_abs_error() == Approx(0.1).epsilon(1e-4));
  CHECK(s.mean_abs_error() == Approx(0.1).epsilon(1e-4));
  CHECK(s.cosine() < 1.0);
  CHECK(s.cosine() > 0.99);
  quant::interp::ErrorStats same;
  REQUIRE(same.add(ref, ref).is_ok());
  CHECK(std::isinf(same.snr_db()));
  CHECK(same.cosine() == Approx(1.0));
  CHECK_FALSE(s.add(ref, Tensor::from_vector<float>({2}, {1, 2})).is_ok());
}

TEST_CASE("argmax per row and top-k", "[interp][compare]") {
  Tensor scores = Tensor::from_vector<float>({2, 3}, {0.1f, 0.7f, 0.2f, 5, 5, 1});
  CHECK(quant::interp::argmax_rows(scores) == std::vector<int64_t>{1, 0});
  const float row[] = {0.1f, 0.7f, 0.2f};
  CHECK(quant::interp::in_top_k(row, 3, 2, 2));
  CHECK_FALSE(quant::interp::in_top_k(row, 3, 0, 2));
  CHECK_FALSE(quant::interp::in_top_k(row, 3, 7, 5));
}
