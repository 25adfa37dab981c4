#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/calib/gptq.h"

using quant::Tensor;
using quant::calib::GptqOptions;
using quant::calib::Hessian;
using quant::calib::RoundedWeights;

namespace {

// Rows of X [n, k] with correlated columns: x = z A, A lower triangular with ones.
std::vector<float> correlated_inputs(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) {
    float acc = 0;
    for (int64_t c = 0; c < k; ++c) {
      acc = 0.8f * acc + normal(rng);
      x[static_cast<size_t>(r * k + c)] = acc;
    }
  }
  return x;
}

std::vector<float> random_weights(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = normal(rng);
  return w;
}

Hessian hessian_of(const std::vector<float>& x, int64_t n, int64_t k) {
  Hessian h;
  REQUIRE(quant::calib::add_hessian_rows(Tensor::from_vector<float>({n, k}, x), h));
  return h;
}

// ||X W^T - X Q^T||^2, Q the dequantized weights.
double output_error(const std::vector<float>& x, int64_t n, const std::vector<float>& w, const RoundedWeights& q) {
  double e = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < q.rows; ++o) {
      double d = 0;
      for (int64_t c = 0; c < q.cols; ++c)
        d += static_cast<double>(x[static_cast<size_t>(r * q.cols + c)]) *
             (w[static_cast<size_t>(o * q.cols + c)] - q.dequantized(o, c));
      e += d * d;
    }
  return e;
}

}  // namespace

TEST_CASE("hessian rows: sums of x x^T in the lower triangle, non-finite rows skipped", "[calib][gptq]") {
  Hessian h;
  REQUIRE(quant::calib::add_hessian_rows(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}), h));
  CHECK(h.k == 2);
  CHECK(h.rows == 2);
  CHECK(h.sum[0] == 10);  // 1 + 9
  CHECK(h.sum[2] == 14);  // 2 + 12
  CHECK(h.sum[3] == 20);  // 4 + 16
  REQUIRE(quant::calib::add_hessian_rows(Tensor::from_vector<float>({1, 1, 2}, {NAN, 1}), h));
  CHECK(h.rows == 2);
  CHECK_FALSE(quant::calib::add_hessian_rows(Tensor::from_vector<float>({1, 3}, {1, 2, 3}), h));
}

TEST_CASE("cholesky: a known factor, and not positive definite refused", "[calib][gptq]") {
  std::vector<double> a = {4, 2, 2, 3};
  REQUIRE(quant::calib::cholesky_lower(a, 2));
  CHECK(a[0] == Approx(2));
  CHECK(a[1] == 0);
  CHECK(a[2] == Approx(1));
  CHECK(a[3] == Approx(std::sqrt(2.0)));
  std::vector<double> b = {1, 2, 2, 1};
  CHECK_FALSE(quant::calib::cholesky_lower(b, 2));
}

TEST_CASE("gptq on an identity Hessian is round to nearest", "[calib][gptq]") {
  const int64_t rows = 6, k = 96;
  const auto w = random_weights(rows, k, 7);
  Hessian h;  // H = 2 X^T X / n = I
  h.k = k;
  h.rows = 2;
  h.sum.assign(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) h.sum[static_cast<size_t>(i * k + i)] = 1;
  for (int64_t group : {32, 64, 96}) {
    const auto codes = group == 96 ? quant::calib::kInt8Symmetric : quant::calib::kInt4Torchao;
    for (bool act_order : {false, true}) {
      GptqOptions o;
      o.act_order = act_order;
      o.block = 40;  // groups across blocks too
      const auto g = quant::calib::gptq_round(w.data(), rows, k, group, codes, h, o);
      const auto r = quant::calib::round_to_nearest(w.data(), rows, k, group, codes);
      CHECK(g.fallback.empty());
      CHECK(g.weights.q == r.q);
      CHECK(g.weights.scale == r.scale);
    }
  }
}

TEST_CASE("gptq lowers ||XW - XQ|| below round to nearest on correlated inputs", "[calib][gptq]") {
  const int64_t n = 512, k = 128, rows = 16;
  const auto x = correlated_inputs(n, k, 1);
  const auto w = random_weights(rows, k, 2);
  const Hessian h = hessian_of(x, n, k);
  struct Case {
    int64_t group;
    quant::calib::SymmetricCodes codes;
  };
  for (const Case& c : {Case{32, quant::calib::kInt4Torchao}, Case{128, quant::calib::kInt4Torchao},
                        Case{k, quant::calib::kInt8Symmetric}}) {
    const double rtn = output_error(x, n, w, quant::calib::round_to_nearest(w.data(), rows, k, c.group, c.codes));
    for (bool act_order : {false, true}) {
      GptqOptions o;
      o.act_order = act_order;
      const auto g = quant::calib::gptq_round(w.data(), rows, k, c.group, c.codes, h, o);
      REQUIRE(g.fallback.empty());
      const double gptq = output_error(x, n, w, g.weights);
      INFO("group " << c.group << " act_order " << act_order << ": rtn " << rtn << ", gptq " << gptq);
      CHECK(gptq < 0.8 * rtn);
    }
  }
}

TEST_CASE("gptq: deterministic; dead inputs quantize to 0; no rows falls back", "[calib][gptq]") {
  const int64_t n = 64, k = 32, rows = 4;
  auto x = correlated_inputs(n, k, 3);
  for (int64_t r = 0; r < n; ++r) x[static_cast<size_t>(r * k + 5)] = 0;  // input 5 never seen
  const auto w = random_weights(rows, k, 4);
  const Hessian h = hessian_of(x, n, k);
  GptqOptions o;
  o.act_order = true;
  const auto a = quant::calib::gptq_round(w.data(), rows, k, 16, quant::calib::kInt4Torchao, h, o);
  const auto b = quant::calib::gptq_round(w.data(), rows, k, 16, quant::calib::kInt4Torchao, h, o);
  CHECK(a.weights.q == b.weights.q);
  CHECK(a.weights.scale == b.weights.scale);
  CHECK(a.dead_inputs == 1);
  for (int64_t r = 0; r < rows; ++r) CHECK(a.weights.q[static_cast<size_t>(r * k + 5)] == 0);
  const auto none = quant::calib::gptq_round(w.data(), rows, k, 16, quant::calib::kInt4Torchao, Hessian{}, o);
  CHECK_FALSE(none.fallback.empty());
  CHECK(none.weights.q == quant::calib::round_to_nearest(w.data(), rows, k, 16, quant::calib::kInt4Torchao).q);
}
