// The fast convolution paths (im2col-packed GEMM, 1x1, depthwise) against the
// reference conv_f32 over swept geometries, with and without prepacked
// weights, fused clamps and several thread counts.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_fast.h"

using namespace quant::kernels;

namespace {

int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

struct Case {
  int64_t batch, c, m, group;
  Dims in, kernel, strides, dilations, pb, pe;
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.batch = c.batch;
  g.in_channels = c.c;
  g.out_channels = c.m;
  g.group = c.group;
  g.in_spatial = c.in;
  g.kernel = c.kernel;
  g.strides = c.strides;
  g.dilations = c.dilations;
  g.pads_begin = c.pb;
  g.pads_end = c.pe;
  resolve_conv_pads(AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                    g.out_spatial);
  return g;
}

std::string describe(const Case& c) {
  auto dims = [](const Dims& d) {
    std::string s;
    for (int64_t v : d) s += std::to_string(v) + ",";
    return s;
  };
  return "N=" + std::to_string(c.batch) + " C=" + std::to_string(c.c) + " M=" + std::to_string(c.m) +
         " group=" + std::to_string(c.group) + " in=" + dims(c.in) + " k=" + dims(c.kernel) + " s=" + dims(c.strides) +
         " d=" + dims(c.dilations) + " pb=" + dims(c.pb) + " pe=" + dims(c.pe);
}

}  // namespace

TEST_CASE("conv_f32_fast matches the reference conv_f32 over many geometries", "[kernels][conv]") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<Case> cases = {
      // im2col GEMM: pads, strides, dilations, 1-D and 3-D, groups, batches
      {1, 3, 4, 1, {7}, {3}, {2}, {1}, {1}, {0}},
      {2, 4, 6, 2, {6, 5}, {3, 2}, {1, 2}, {2, 1}, {2, 0}, {1, 1}},
      {1, 2, 3, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 0, 1}},
      {1, 6, 3, 3, {8, 9}, {3, 3}, {3, 2}, {2, 3}, {2, 1}, {0, 2}},
      {3, 1, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {3, 3}, {3, 3}},  // corner windows entirely in padding
      {1, 3, 13, 1, {30, 31}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},  // resnet stem shape, small
      {1, 32, 20, 1, {25, 24}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},  // K = 288 > one depth block, N > 512
      {2, 8, 9, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      // 1x1, stride 1, no padding: the input is B as it lies
      {1, 24, 40, 1, {23, 25}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 6, 4, 2, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 5, 7, 1, {11}, {1}, {1}, {1}, {0}, {0}},
      // 1x1 with stride or padding goes through im2col
      {1, 8, 16, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 4, 5, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 1}},
      // depthwise: strides 1 and 2 at widths around the 8-lane blocks, dilation, 1-D and 3-D
      {1, 5, 5, 5, {17, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 4, 4, 4, {18, 33}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 3, 3, 3, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},
      {1, 3, 3, 3, {15, 40}, {5, 5}, {1, 2}, {2, 1}, {2, 2}, {2, 2}},
      {1, 2, 2, 2, {19}, {3}, {2}, {1}, {1}, {1}},
      {1, 3, 3, 3, {20, 23}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},  // stride 3: the generic row update
      {1, 2, 2, 2, {9, 70}, {3, 4}, {1, 1}, {1, 3}, {1, 5}, {1, 4}},     // taps wholly in the padding
      {1, 2, 2, 2, {4, 5, 6}, {2, 2, 3}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1}, {0, 1, 1}},
      // channel multiplier (one input channel, two outputs per group): GEMM path
      {1, 3, 6, 3, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  for (const Case& c : cases) {
    const ConvGeometry g = geometry(c);
    const int64_t depth = (c.c / c.group) * product(c.kernel);
    std::vector<float> x(size_t(c.batch * c.c * product(c.in))), w(size_t(c.m * depth)), bias(size_t(c.m));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    for (float& v : bias) v = dist(rng);
    const size_t out_size = size_t(c.batch * c.m * product(g.out_spatial));
    std::vector<float> want(out_size);
    conv_f32(g, x.data(), w.data(), bias.data(), want.data());
    const float tol = 1e-5f * float(depth + 4);
    const PackedConvWeights packed(w.data(), c.m, c.group, depth);
    INFO(describe(c));
    std::vector<float> one(out_size, 99.0f);
    conv_f32_fast(g, x.data(), w.data(), nullptr, bias.data(), one.data(), 1);
    for (size_t i = 0; i < out_size; ++i) REQUIRE(std::abs(one[i] - want[i]) <= tol);
    for (int threads : {1, 2, 3}) {
      std::vector<float> got(out_size, 99.0f);
      conv_f32_fast(g, x.data(), w.data(), &packed, bias.data(), got.data(), threads);
      INFO("prepacked, threads " << threads);
      CHECK(got == one);  // the same bits: packing and threads do not change the sums
    }
    // Fused clamp (Relu6-like) and no bias.
    std::vector<float> no_bias(out_size), clamped(out_size);
    conv_f32(g, x.data(), w.data(), nullptr, no_bias.data());
    conv_f32_fast(g, x.data(), w.data(), &packed, nullptr, clamped.data(), 2, ConvActivation{true, 0.0f, 0.5f});
    for (size_t i = 0; i < out_size; ++i) REQUIRE(std::abs(clamped[i] - std::clamp(no_bias[i], 0.0f, 0.5f)) <= tol);
  }
}
