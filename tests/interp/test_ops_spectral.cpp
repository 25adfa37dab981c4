// Signal-processing ops through one-node graphs (opset 17): DFT against
// closed forms and its own inverse, STFT against per-frame DFTs, the three
// windows, MelWeightMatrix, and the refusals of bad shapes and attributes.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::f32;
using quant::testing::i64;
using quant::testing::NodeSpec;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::values_of;

namespace {

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol));
  }
}

}  // namespace

TEST_CASE("DFT: zero padding, onesided, a cosine's two bins, inverse round trip", "[interp][spectral]") {
  // [1, 2] padded to 4: X[k] = 1 + 2 e^{-i pi k / 2} = 3, 1-2i, -1, 1+2i.
  NodeSpec s{"DFT", 17, {f32({1, 2, 1}, {1, 2}), i64({}, {4})}};
  Tensor y = run_one(s);
  CHECK(y.shape() == Dims{1, 4, 2});
  check_close(values_of<float>(y), {3, 0, 1, -2, -1, 0, 1, 2});
  s.attributes["onesided"] = Attribute::of_int(1);
  y = run_one(s);
  CHECK(y.shape() == Dims{1, 3, 2});
  check_close(values_of<float>(y), {3, 0, 1, -2, -1, 0});

  // cos(2 pi 3 t / 16): n/2 = 8 at bins 3 and 13, zero elsewhere.
  std::vector<float> x(16);
  for (int t = 0; t < 16; ++t) x[static_cast<size_t>(t)] = static_cast<float>(std::cos(2 * std::numbers::pi * 3 * t / 16));
  Tensor spec = run_one({"DFT", 17, {f32({1, 16, 1}, x)}});
  for (int k = 0; k < 16; ++k) {
    INFO("bin " << k);
    CHECK(spec.data<float>()[2 * k] == Approx(k == 3 || k == 13 ? 8.0f : 0.0f).margin(1e-5));
    CHECK(spec.data<float>()[2 * k + 1] == Approx(0.0f).margin(1e-5));
  }
  NodeSpec inv{"DFT", 17, {spec}};
  inv.attributes["inverse"] = Attribute::of_int(1);
  Tensor back = run_one(inv);
  for (int t = 0; t < 16; ++t) {
    CHECK(back.data<float>()[2 * t] == Approx(x[static_cast<size_t>(t)]).margin(1e-5));
    CHECK(back.data<float>()[2 * t + 1] == Approx(0.0f).margin(1e-5));
  }
}

TEST_CASE("DFT along another axis; opset 20 takes the axis as an input", "[interp][spectral]") {
  // [1, 2, 2, 1]: along axis 2 each row [a, b] gives [a + b, a - b].
  Tensor x = f32({1, 2, 2, 1}, {1, 2, 3, 5});
  NodeSpec s{"DFT", 17, {x}};
  s.attributes["axis"] = Attribute::of_int(2);
  check_close(values_of<float>(run_one(s)), {3, 0, -1, 0, 8, 0, -2, 0});
  NodeSpec s20{"DFT", 20, {x, Tensor(), i64({}, {2})}};
  check_close(values_of<float>(run_one(s20)), {3, 0, -1, 0, 8, 0, -2, 0});
  // Along axis 1: columns [1, 3] and [2, 5].
  s.attributes["axis"] = Attribute::of_int(1);
  check_close(values_of<float>(run_one(s)), {4, 0, 7, 0, -2, 0, -3, 0});
}

TEST_CASE("DFT refuses the component axis, a bad last dim, onesided complex input", "[interp][spectral]") {
  NodeSpec s{"DFT", 17, {f32({1, 2, 1}, {1, 2})}};
  s.attributes["axis"] = Attribute::of_int(2);
  CHECK_THAT(run_error(s), Catch::Contains("axis"));
  CHECK_THAT(run_error({"DFT", 17, {f32({1, 2, 3}, {1, 2, 3, 4, 5, 6})}}), Catch::Contains("1 or 2"));
  NodeSpec c{"DFT", 17, {f32({1, 2, 2}, {1, 0, 2, 0})}};
  c.attributes["onesided"] = Attribute::of_int(1);
  CHECK_THAT(run_error(c), Catch::Contains("real input"));
  CHECK_THAT(run_error({"DFT", 17, {f32({1, 2, 1}, {1, 2}), i64({}, {0})}}), Catch::Contains("dft_length"));
}

TEST_CASE("STFT: frames are windowed DFTs", "[interp][spectral]") {
  std::vector<float> sig{1, -2, 3, 0.5f, 4, 2, -1, 0};
  Tensor window = f32({4}, {0.25f, 0.5f, 1.0f, 0.75f});
  NodeSpec s{"STFT", 17, {f32({1, 8, 1}, sig), i64({}, {2}), window}};
  Tensor y = run_one(s);
  CHECK(y.shape() == Dims{1, 3, 3, 2});  // 1 + (8 - 4) / 2 frames, 4 / 2 + 1 bins
  for (int f = 0; f < 3; ++f) {
    std::vector<float> frame;
    for (int t = 0; t < 4; ++t) frame.push_back(sig[static_cast<size_t>(2 * f + t)] * window.data<float>()[t]);
    NodeSpec d{"DFT", 17, {f32({1, 4, 1}, frame)}};
    d.attributes["onesided"] = Attribute::of_int(1);
    std::vector<float> want = values_of<float>(run_one(d));
    std::vector<float> got(y.data<float>() + f * 6, y.data<float>() + f * 6 + 6);
    INFO("frame " << f);
    check_close(got, want);
  }
  // frame_length without a window: a rectangular window; two-sided output.
  NodeSpec r{"STFT", 17, {f32({1, 8, 1}, sig), i64({}, {4}), Tensor(), i64({}, {4})}};
  r.attributes["onesided"] = Attribute::of_int(0);
  Tensor y2 = run_one(r);
  CHECK(y2.shape() == Dims{1, 2, 4, 2});
  CHECK(y2.data<float>()[0] == Approx(2.5f));  // 1 - 2 + 3 + 0.5
}

TEST_CASE("STFT of a complex signal, two-sided", "[interp][spectral]") {
  // One frame of [1, i]: X[0] = 1 + i, X[1] = 1 - i.
  NodeSpec s{"STFT", 17, {f32({1, 2, 2}, {1, 0, 0, 1}), i64({}, {1}), Tensor(), i64({}, {2})}};
  s.attributes["onesided"] = Attribute::of_int(0);
  Tensor y = run_one(s);
  CHECK(y.shape() == Dims{1, 1, 2, 2});
  check_close(values_of<float>(y), {1, 1, 1, -1});
}

TEST_CASE("STFT refusals", "[interp][spectral]") {
  Tensor sig = f32({1, 4, 1}, {1, 2, 3, 4});
  CHECK_THAT(run_error({"STFT", 17, {sig, i64({}, {1})}}), Catch::Contains("window or a frame_length"));
  CHECK_THAT(run_error({"STFT", 17, {sig, i64({}, {1}), f32({8}, std::vector<float>(8, 1))}}),
             Catch::Contains("frame_length"));
  CHECK_THAT(run_error({"STFT", 17, {sig, i64({}, {0}), f32({2}, {1, 1})}}), Catch::Contains("frame_step"));
  CHECK_THAT(run_error({"STFT", 17, {sig, i64({}, {1}), f32({2}, {1, 1}), i64({}, {3})}}), Catch::Contains("differs"));
  CHECK_THAT(run_error({"STFT", 17, {f32({1, 2, 2}, {1, 0, 2, 0}), i64({}, {1}), f32({2}, {1, 1})}}),
             Catch::Contains("real signal"));
}

TEST_CASE("Hann, Hamming and Blackman windows, periodic and symmetric", "[interp][spectral]") {
  NodeSpec hann{"HannWindow", 17, {i64({}, {4})}};
  check_close(values_of<float>(run_one(hann)), {0, 0.5f, 1, 0.5f});
  hann.attributes["periodic"] = Attribute::of_int(0);
  hann.inputs[0] = i64({}, {5});
  check_close(values_of<float>(run_one(hann)), {0, 0.5f, 1, 0.5f, 0});
  NodeSpec hamming{"HammingWindow", 17, {i64({}, {2})}};
  check_close(values_of<float>(run_one(hamming)), {4.0f / 46, 1});
  NodeSpec blackman{"BlackmanWindow", 17, {i64({}, {4})}};
  check_close(values_of<float>(run_one(blackman)), {0, 0.34f, 1, 0.34f});
  blackman.attributes["output_datatype"] = Attribute::of_int(11);  // double
  Tensor d = run_one(blackman);
  CHECK(d.dtype() == DType::Float64);
  CHECK(d.data<double>()[1] == Approx(0.34));
  blackman.attributes["output_datatype"] = Attribute::of_int(8);  // string
  CHECK_THAT(run_error(blackman), Catch::Contains("output_datatype"));
  CHECK_THAT(run_error({"HannWindow", 17, {i64({2}, {1, 2})}}), Catch::Contains("scalar"));
}

TEST_CASE("MelWeightMatrix: triangles peaking at 1, out-of-range edges refused", "[interp][spectral]") {
  // 8 mel bins of a 16-point DFT at 8192 Hz over [0, 4096] Hz (the node test's case).
  NodeSpec s{"MelWeightMatrix", 17, {i64({}, {8}), i64({}, {16}), i64({}, {8192}), f32({}, {0}), f32({}, {4096})}};
  Tensor w = run_one(s);
  CHECK(w.shape() == Dims{9, 8});
  for (int64_t m = 0; m < 8; ++m) {
    float peak = 0;
    for (int64_t r = 0; r < 9; ++r) {
      const float v = w.data<float>()[r * 8 + m];
      CHECK(v >= 0.0f);
      CHECK(v <= 1.0f);
      peak = std::max(peak, v);
    }
    CHECK(peak == 1.0f);
  }
  s.inputs[4] = f32({}, {9000});  // past the Nyquist bin
  CHECK_THAT(run_error(s), Catch::Contains("outside"));
  s.inputs[4] = f32({}, {4096});
  s.inputs[0] = i64({}, {0});
  CHECK_THAT(run_error(s), Catch::Contains("num_mel_bins"));
}
