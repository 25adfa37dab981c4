#include <catch2/catch.hpp>

#include "libquant/calib/bias_correction.h"

using quant::Tensor;
using quant::calib::ConvGeometry;
using quant::calib::InputMeans;

TEST_CASE("conv input sums: each tap's mean over the output positions, padding reads 0", "[calib][bias_correction]") {
  // x = 1 everywhere, 3x3 kernel, pad 1, stride 1: a corner tap reads the
  // image on 4 of the 9 outputs, an edge tap on 6, the centre on all 9.
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  ConvGeometry geo{{3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  InputMeans m;
  REQUIRE(quant::calib::add_conv_input_sums(x, geo, m));
  CHECK(m.shape == quant::Dims{1, 3, 3});
  CHECK(m.count == 9);
  CHECK(m.mean(0) == Approx(4.0 / 9));
  CHECK(m.mean(1) == Approx(6.0 / 9));
  CHECK(m.mean(4) == Approx(1.0));
  // Stride 2 without padding on a 1x5 row [0 1 2 3 4], kernel 1x3: outputs
  // read [0 1 2] and [2 3 4]: tap means 1, 2, 3.
  Tensor row = Tensor::from_vector<float>({1, 1, 1, 5}, {0, 1, 2, 3, 4});
  InputMeans r;
  REQUIRE(quant::calib::add_conv_input_sums(row, ConvGeometry{{1, 3}, {1, 2}, {1, 1}, {0, 0, 0, 0}}, r));
  CHECK(r.count == 2);
  CHECK(r.mean(0) == Approx(1));
  CHECK(r.mean(1) == Approx(2));
  CHECK(r.mean(2) == Approx(3));
  // A second sample accumulates; a rank that does not fit is refused.
  REQUIRE(quant::calib::add_conv_input_sums(row, ConvGeometry{{1, 3}, {1, 2}, {1, 1}, {0, 0, 0, 0}}, r));
  CHECK(r.count == 4);
  CHECK(r.mean(2) == Approx(3));
  CHECK_FALSE(quant::calib::add_conv_input_sums(Tensor::from_vector<float>({5}, {0, 1, 2, 3, 4}), geo, m));
}

TEST_CASE("expected output shift is (W_q - W) E[x] per output channel", "[calib][bias_correction]") {
  SECTION("Gemm, both layouts") {
    // A rows [1 2] and [3 4]: E[x] = [2 3].
    InputMeans m;
    REQUIRE(quant::calib::add_gemm_input_sums(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}), false, m));
    CHECK(m.mean(0) == Approx(2));
    CHECK(m.mean(1) == Approx(3));
    InputMeans mt;  // the same A given transposed
    REQUIRE(quant::calib::add_gemm_input_sums(Tensor::from_vector<float>({2, 2}, {1, 3, 2, 4}), true, mt));
    CHECK(mt.mean(1) == Approx(3));
    // W [K=2, N=3]; W_q - W = [[0.1 0 -0.2] [0 0.05 0.1]].
    Tensor w = Tensor::from_vector<float>({2, 3}, {1, 1, 1, 1, 1, 1});
    Tensor wq = Tensor::from_vector<float>({2, 3}, {1.1f, 1, 0.8f, 1, 1.05f, 1.1f});
    auto s = quant::calib::expected_output_shift(w, wq, m, true, false, 1);
    REQUIRE(s.size() == 3);
    CHECK(s[0] == Approx(0.2).margin(1e-6));
    CHECK(s[1] == Approx(0.15).margin(1e-6));
    CHECK(s[2] == Approx(-0.4 + 0.3).margin(1e-6));
    // transB: W [N=3, K=2].
    Tensor wt = Tensor::from_vector<float>({3, 2}, {1, 1, 1, 1, 1, 1});
    Tensor wqt = Tensor::from_vector<float>({3, 2}, {1.1f, 1, 1, 1.05f, 0.8f, 1.1f});
    auto st = quant::calib::expected_output_shift(wt, wqt, m, true, true, 1);
    CHECK(st[0] == Approx(s[0]).margin(1e-6));
    CHECK(st[1] == Approx(s[1]).margin(1e-6));
    CHECK(st[2] == Approx(s[2]).margin(1e-6));
  }
  SECTION("depthwise Conv reads its own channel") {
    // 2 channels, 1x1 kernel, group 2: channel means 1 and 5.
    InputMeans m;
    REQUIRE(quant::calib::add_conv_input_sums(Tensor::from_vector<float>({1, 2, 1, 2}, {0, 2, 4, 6}),
                                              ConvGeometry{{1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, m));
    Tensor w = Tensor::from_vector<float>({2, 1, 1, 1}, {0.5f, 0.5f});
    Tensor wq = Tensor::from_vector<float>({2, 1, 1, 1}, {0.25f, 1.0f});
    auto s = quant::calib::expected_output_shift(w, wq, m, false, false, 2);
    CHECK(s[0] == Approx(-0.25 * 1));
    CHECK(s[1] == Approx(0.5 * 5));
  }
}
