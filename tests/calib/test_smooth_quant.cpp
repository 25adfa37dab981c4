// calib/smooth_quant.h: SmoothQuant's factors, weight rows and alpha search on
// hand-built cases whose answers are known.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "libquant/calib/smooth_quant.h"

using namespace quant;
using namespace quant::calib;

TEST_CASE("smooth quant: factors are a^alpha / w^(1 - alpha), 1 where a side is 0", "[calib][smooth_quant]") {
  const std::vector<float> a = {4, 100, 0, 1}, w = {1, 4, 2, 0};
  CHECK(smoothing_factors(a, w, 0.5) == std::vector<float>{2, 5, 1, 1});
  CHECK(smoothing_factors(a, w, 1.0) == std::vector<float>{4, 100, 1, 1});
  CHECK(smoothing_factors(a, w, 0.0) == std::vector<float>{1, 0.25f, 1, 1});
  const auto s = smoothing_factors({9}, {4}, 0.25);  // 9^0.25 / 4^0.75
  CHECK(s[0] == Approx(std::pow(9.0, 0.25) / std::pow(4.0, 0.75)).epsilon(1e-7));
  // Clamped to [1e-5, 1e5].
  CHECK(smoothing_factors({1e12f}, {1}, 1.0)[0] == 1e5f);
  CHECK(smoothing_factors({1}, {1e12f}, 0.0)[0] == 1e-5f);
}

TEST_CASE("smooth quant: weight rows measured and scaled in both layouts", "[calib][smooth_quant]") {
  // W [K = 2, N = 3] and the same as [N, K] (Gemm transB).
  Tensor w = Tensor::from_vector<float>({2, 3}, {1, -6, 2, 0.5f, 0.25f, -3});
  Tensor wt = Tensor::from_vector<float>({3, 2}, {1, 0.5f, -6, 0.25f, 2, -3});
  std::vector<float> m;
  fold_weight_channel_absmax({&w, false}, m);
  CHECK(m == std::vector<float>{6, 3});
  std::vector<float> mt = {7, 1};  // folded by max into what is there
  fold_weight_channel_absmax({&wt, true}, mt);
  CHECK(mt == std::vector<float>{7, 3});
  scale_weight_channels(w, false, {2, 0.5f});
  scale_weight_channels(wt, true, {2, 0.5f});
  CHECK(std::vector<float>(w.values<float>().begin(), w.values<float>().end()) ==
        std::vector<float>{2, -12, 4, 0.25f, 0.125f, -1.5f});
  CHECK(std::vector<float>(wt.values<float>().begin(), wt.values<float>().end()) ==
        std::vector<float>{2, 0.25f, -12, 0.125f, 4, -1.5f});
}

TEST_CASE("smooth quant: one outlier channel; smoothing cuts the quantized output error, auto finds it",
          "[calib][smooth_quant]") {
  const int64_t rows = 64, k = 16, n = 8;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) x[static_cast<size_t>(r * k + j)] = normal(rng) * (j == 5 ? 60.0f : 1.0f);
  std::vector<float> wv(static_cast<size_t>(k * n));
  for (float& v : wv) v = normal(rng) * 0.1f;
  Tensor w = Tensor::from_vector<float>({k, n}, wv);
  std::vector<float> act(static_cast<size_t>(k), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) act[static_cast<size_t>(j)] = std::max(act[static_cast<size_t>(j)], std::fabs(x[static_cast<size_t>(r * k + j)]));

  const std::vector<WeightView> weights = {{&w, false}};
  const std::vector<float> ones(static_cast<size_t>(k), 1.0f);
  const double without = smoothed_output_error(x.data(), rows, k, weights, ones);
  std::vector<float> wm;
  fold_weight_channel_absmax(weights[0], wm);
  const double half = smoothed_output_error(x.data(), rows, k, weights, smoothing_factors(act, wm, 0.5));
  CHECK(without > 0);
  CHECK(half < without / 4);
  const AlphaChoice c = search_alpha(x.data(), rows, k, weights, act);
  CHECK(c.error_without == without);
  CHECK(c.alpha > 0);
  CHECK(c.error <= half);
  CHECK(c.error == smoothed_output_error(x.data(), rows, k, weights, smoothing_factors(act, wm, c.alpha)));

  // Without outliers (all channels alike) smoothing has little to gain, and
  // alpha 0 ... 1 all stay close: the search never does worse than its grid.
  const AlphaChoice flat = search_alpha(wv.data(), n, k, weights, std::vector<float>(static_cast<size_t>(k), 0.3f));
  CHECK(flat.error <= smoothed_output_error(wv.data(), n, k, weights, smoothing_factors(std::vector<float>(static_cast<size_t>(k), 0.3f), wm, 0.5)));
}
