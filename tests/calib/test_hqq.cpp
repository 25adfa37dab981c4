#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/calib/hqq.h"

using quant::calib::kInt4Torchao;
using quant::calib::kInt8Symmetric;

TEST_CASE("hqq: a group of equal values gets the scale that represents them exactly", "[calib][hqq]") {
  // Round to nearest: scale 1 / 7.5, 1 / scale = 7.5 rounds to 8, clamped to 7: error 1/15 each.
  const std::vector<float> w(32, 1.0f);
  const float rtn = quant::calib::symmetric_scale(w.data(), 32, kInt4Torchao);
  CHECK(quant::calib::mean_abs_error(w.data(), 32, rtn, kInt4Torchao) == Approx(1.0 / 15));
  // The shrinkage leaves small errors to the quadratic step: s = <W, q> / <q, q> = 1/7.
  const float s = quant::calib::hqq_symmetric_scale(w.data(), 32, kInt4Torchao);
  CHECK(s == Approx(1.0 / 7));
  CHECK(quant::calib::mean_abs_error(w.data(), 32, s, kInt4Torchao) < 1e-6);
}

TEST_CASE("hqq never increases the mean |W - W_r| over round to nearest, and lowers it overall", "[calib][hqq]") {
  std::mt19937 rng(11);
  std::student_t_distribution<float> heavy(3.0f);  // heavy tails: outliers set absmax
  for (auto codes : {kInt4Torchao, kInt8Symmetric}) {
    double total_rtn = 0, total_hqq = 0;
    for (int g = 0; g < 200; ++g) {
      std::vector<float> w(64);
      for (float& v : w) v = 0.02f * heavy(rng);
      const float rtn = quant::calib::symmetric_scale(w.data(), 64, codes);
      const float hqq = quant::calib::hqq_symmetric_scale(w.data(), 64, codes);
      const double e_rtn = quant::calib::mean_abs_error(w.data(), 64, rtn, codes);
      const double e_hqq = quant::calib::mean_abs_error(w.data(), 64, hqq, codes);
      CHECK(e_hqq <= e_rtn);
      total_rtn += e_rtn;
      total_hqq += e_hqq;
    }
    INFO("qmax " << codes.qmax << ": rtn " << total_rtn << ", hqq " << total_hqq);
    // int4's coarse grid leaves more to gain than int8's.
    CHECK(total_hqq < (codes.qmax == 7 ? 0.95 : 0.995) * total_rtn);
  }
}

TEST_CASE("hqq_round: per group, deterministic, zeros stay zero", "[calib][hqq]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(3 * 70);
  for (float& v : w) v = normal(rng);
  std::fill(w.begin(), w.begin() + 32, 0.0f);  // row 0, group 0
  const auto a = quant::calib::hqq_round(w.data(), 3, 70, 32, kInt4Torchao);
  const auto b = quant::calib::hqq_round(w.data(), 3, 70, 32, kInt4Torchao);
  CHECK(a.q == b.q);
  CHECK(a.scale == b.scale);
  REQUIRE(a.scale.size() == 9);  // 3 rows x ceil(70 / 32)
  for (int i = 0; i < 32; ++i) CHECK(a.q[static_cast<size_t>(i)] == 0);
  for (int8_t q : a.q) CHECK((q >= -8 && q <= 7));
}
