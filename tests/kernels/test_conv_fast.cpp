// The fast convolution paths (im2col-packed GEMM, 1x1, direct, lanes, depthwise) against the
// reference conv_f32 over swept geometries, with and without prepacked
// weights, fused clamps and several thread counts.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_depthwise_3x3.h"
#include "libquant/kernels/conv_fast.h"
#include "libquant/kernels/conv_lanes.h"

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
      {1, 4, 8, 1, {5, 75}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},  // stride-2 runs longer than 16 taps
      // 1x1, stride 1, no padding: the input is B as it lies
      {1, 24, 40, 1, {23, 25}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 6, 4, 2, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 5, 7, 1, {11}, {1}, {1}, {1}, {0}, {0}},
      {1, 16, 200, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},  // M >= 4 N: AVX2 packs B (the input)
      // 1x1 with strides and no padding: the input subsampled, then read as
      // B (odd and even widths, strides 2, 3 x 2 and 1 x 3, 1-D and 3-D,
      // groups and a batch of two); with padding: im2col
      {1, 8, 16, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {2, 6, 10, 2, {10, 7}, {1, 1}, {3, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 5, 7, 1, {4, 20}, {1, 1}, {1, 3}, {1, 1}, {0, 0}, {0, 0}},
      {1, 4, 6, 1, {19}, {1}, {2}, {1}, {0}, {0}},
      {1, 3, 5, 1, {5, 4, 7}, {1, 1, 1}, {2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 64, 32, 1, {14, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 4, 5, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 1}},
      // depthwise: strides 1 and 2 at widths around the 8-lane blocks, dilation, 1-D and 3-D
      {1, 5, 5, 5, {17, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 4, 4, 4, {18, 33}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 3, 3, 3, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},
      {1, 3, 3, 3, {7, 37}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 2, 2, 2, {3, 3, 9}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},  // 3-D, depth 3: generic loops
      {1, 3, 3, 3, {15, 40}, {5, 5}, {1, 2}, {2, 1}, {2, 2}, {2, 2}},
      {1, 2, 2, 2, {19}, {3}, {2}, {1}, {1}, {1}},
      {1, 3, 3, 3, {20, 23}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},  // stride 3: the generic row update
      {1, 2, 2, 2, {9, 70}, {3, 4}, {1, 1}, {1, 3}, {1, 5}, {1, 4}},     // taps wholly in the padding
      {1, 2, 2, 2, {4, 5, 6}, {2, 2, 3}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1}, {0, 1, 1}},
      // depthwise 3x3 in blocks of channels (both blocked geometries, two
      // images, a last block cut short: channels 16-18 go plane by plane)
      {2, 19, 19, 19, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 16, 16, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 24, 24, 24, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},
      // channel multiplier (one input channel, two outputs per group): GEMM path
      {1, 3, 6, 3, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // More output channels than pixels, 3 column panels, K = 288: threads
      // split the rows and share B, packed from im2col in runs of panels.
      {1, 32, 96, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // 7x7 outputs (49 columns: a last panel of one column) with row counts
      // off the tile (20 = 3 x 6 + 2, 13), as resnet18's layer4.
      {1, 16, 20, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 24, 13, 1, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 40, 7, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      // The direct path (2-D, at most 64 output channels per group, rows
      // of 56 or more; stride 1 with at least 16 input channels): K in one depth
      // block and over two (32 * 9 = 288), dilation with uneven pads, a
      // 1 x 3 kernel, groups, a batch of two; wide rows of 58 to 64 columns,
      // so panels end inside a row and across rows.
      {1, 16, 12, 1, {6, 58}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 32, 20, 1, {5, 57}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 7, 1, {6, 60}, {3, 3}, {1, 1}, {2, 2}, {2, 1}, {0, 3}},
      {1, 16, 6, 1, {4, 62}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}},
      {1, 32, 4, 2, {5, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Rows of 67: on AVX2 each ends in a panel of 3 columns (one vector).
      {1, 16, 9, 1, {4, 67}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Strided, where rows go straight into y (direct_fits says which): phase
      // planes of a stem-like 7x7/2, odd sizes with uneven pads, strides
      // 2 x 3, dilation 2 on stride 2 (every tap in one phase).
      {1, 3, 10, 1, {20, 120}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},
      {1, 2, 5, 1, {15, 117}, {5, 5}, {2, 2}, {1, 1}, {2, 1}, {1, 2}},
      {1, 3, 4, 1, {9, 175}, {5, 8}, {2, 3}, {1, 1}, {2, 3}, {2, 3}},
      {2, 2, 6, 1, {12, 124}, {5, 5}, {2, 2}, {2, 2}, {4, 4}, {4, 4}},
      // 3x3/2 with an image's 3 channels (mobilenet_v2's stem) and with 16
      // or fewer output channels, odd widths and one-sided pads.
      {1, 3, 8, 1, {6, 116}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 6, 1, {7, 113}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}},
      // Rows of 112 and 80 (mobilenet_v2's stem; 2 x 32 + 16): on AVX-512
      // too each row goes straight into y, ending in a one-vector panel.
      {1, 3, 8, 1, {6, 224}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 9, 1, {4, 80}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // The AVX2 lanes path (AVX2 in force: 16 or more input channels, output
      // channels per group a multiple of 16, weights packed for it): maps of
      // 49 pixels (tiles of 6, then 5 + 4 + 4), 90, 25, 20, 13, 9 (5 + 4), 8
      // (4 + 4) and of 1 to 3; K of one, two and three depth blocks (144, 288, 576);
      // strides with uneven pads, dilation, 7x7/2, 1 x 3, 1-D, groups and
      // a batch of two.
      {1, 16, 16, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 32, 1, {9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 64, 16, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 32, 32, 2, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 24, 16, 1, {11, 13}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}},
      {1, 16, 32, 1, {8, 9}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},
      {1, 16, 16, 1, {12, 12}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},
      {1, 16, 32, 1, {6, 8}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}},
      {1, 16, 16, 1, {20}, {3}, {1}, {1}, {1}, {1}},
      {1, 16, 16, 1, {13}, {3}, {1}, {1}, {1}, {1}},
      {1, 16, 16, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 16, 1, {2, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 16, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 16, 16, 1, {3, 4}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 16, 16, 1, {3, 5}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      // The AVX-512 lanes tiles (AVX-512 in force, output channels per
      // group a multiple of 32): rows of 56 (4 x 14), 30 (3 x 10), 15 (8 +
      // 7), 7 and 1 to 3 pixels; stride 2 with odd rows and one-sided pads;
      // dilation; K of one to three depth blocks (144, 288, 576); 1 x 3 and
      // 1-D kernels; two groups of 32 and a batch of two; stride 3 (not a
      // lanes stride on AVX-512: the GEMM path reads the lanes-packed
      // weights as they lie).
      {1, 16, 32, 1, {3, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 64, 1, {4, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 64, 32, 1, {5, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {0, 1}, {1, 0}},
      {1, 24, 32, 1, {13, 27}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}},
      {1, 32, 32, 1, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {9, 20}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},
      {1, 16, 32, 1, {5, 17}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}},
      {1, 16, 32, 1, {40}, {3}, {2}, {1}, {1}, {1}},
      {2, 64, 64, 2, {6, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {9, 22}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      // 2304 pixels, 64 output channels, K = 288: the sums between depth
      // blocks exceed half a 256 KiB L2 (QTOOL_L2_KB=256, as
      // unit.small_l2_avx2_kernels runs), so one thread takes its pixels
      // in two chunks.
      {1, 32, 64, 1, {48, 48}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Weights of 295 KB split by panels: over a 256 KiB L2 (the same
      // runs), each thread's panels in one run rather than two.
      {1, 128, 64, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Pointwise convs of small maps on the lanes path, the input read in
      // place (AVX2: up to 64 pixels, 16 output channels a panel; AVX-512:
      // up to 196, 32 a panel; larger maps and other counts: the GEMM path):
      // 7 x 7 with K of one and two depth blocks (48, 320), 8 x 8, 14 x 14,
      // a 1-D map, two groups, a batch of two, and 15 x 15 (the GEMM path
      // everywhere).
      {1, 48, 32, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 320, 64, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 16, 96, 1, {8, 8}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 24, 32, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 16, 32, 1, {29}, {1}, {1}, {1}, {0}, {0}},
      {1, 64, 64, 2, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 32, 32, 1, {3, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 32, 32, 1, {15, 15}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
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
    const PackedConvWeights packed(w.data(), c.m, c.group, depth, c.kernel, pointwise_pixels(g));  // as qrun packs them
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
    // Fused residual Add (then the clamp): the same bits as the conv, then
    // the sum, then the clamp, on every path.
    std::vector<float> residual(out_size), fused(out_size, 99.0f);
    for (float& v : residual) v = dist(rng);
    conv_f32_fast(g, x.data(), w.data(), &packed, bias.data(), fused.data(), 2,
                  ConvActivation{true, -0.3f, 0.4f, residual.data()});
    for (size_t i = 0; i < out_size; ++i) REQUIRE(fused[i] == std::clamp(one[i] + residual[i], -0.3f, 0.4f));
    // The lanes, direct and subsampled paths (where they run) against im2col: the same
    // bits, the fused residual and clamp included.
    std::vector<float> im2col(out_size, 99.0f), im2col_fused(out_size, 99.0f);
    conv_f32_fast(g, x.data(), w.data(), &packed, bias.data(), im2col.data(), 2, {}, false);
    CHECK(im2col == one);
    conv_f32_fast(g, x.data(), w.data(), &packed, bias.data(), im2col_fused.data(), 2,
                  ConvActivation{true, -0.3f, 0.4f, residual.data()}, false);
    CHECK(im2col_fused == fused);
  }
}

TEST_CASE("pointwise convs pack for the lanes path on small maps only", "[kernels][conv]") {
  // Bits are the same either way (the case above); this pins which way a
  // pointwise conv goes, as qrun packs it once its first run gives the map.
  const detail::LanesIsa* lanes = detail::lanes_isa(detail::best_gemm_isa());
  const std::vector<float> w(64 * 32 * 9, 0.5f);  // room for the 3 x 3 kernel too
  const std::vector<int64_t> one_by_one = {1, 1}, three_by_three = {3, 3};
  const auto packed_for = [&](int64_t pixels, const std::vector<int64_t>& kernel, int64_t c) {
    return PackedConvWeights(w.data(), 64, 1, c * kernel[0] * kernel[1], kernel, pixels).lanes();
  };
  CHECK_FALSE(packed_for(0, one_by_one, 32));        // map unknown, or not pointwise
  CHECK_FALSE(packed_for(56 * 56, one_by_one, 32));  // a large map: the GEMM path
  CHECK(packed_for(49, one_by_one, 32) == (lanes != nullptr));
  CHECK_FALSE(packed_for(49, one_by_one, 8));  // fewer than 16 input channels
  if (lanes) {
    CHECK(packed_for(lanes->pointwise_max_pixels, one_by_one, 32));
    CHECK_FALSE(packed_for(lanes->pointwise_max_pixels + 1, one_by_one, 32));
    CHECK(packed_for(0, three_by_three, 32));  // larger kernels whatever the map
  }
}

TEST_CASE("depthwise 3x3 plane kernels match the reference conv_f32 on every ISA", "[kernels][conv]") {
  const auto isas = detail::supported_depthwise_3x3_isas();
  if (isas.empty()) SUCCEED("no AVX2/AVX-512 on this CPU: the generic depthwise loops run instead");
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Pads {
    int64_t top, left, bottom, right;
  };
  const Pads pads[] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 1, 1}, {2, 1, 0, 2}, {1, 2, 2, 0}, {0, 0, 2, 2}, {3, 1, 0, 1}};
  // Heights and widths reach every band shape of the AVX-512 kernel: one
  // band or several sharing their edge rows in its ring of scratch rows,
  // bands of 1 to 8 rows (one vector per row) or 1 to 4 (more vectors),
  // rows of 1 to 9 vectors with the last partial or full, and row stride 3
  // (bands of one row). Padding up to 2 puts the first and last rows' loads
  // on the masked path and the others on the in-plane path. Stride 1 with
  // rows up to 16 wide that keep their width (left + right padding 2: one
  // each, two on the left, two on the right) takes the AVX2 kernel's flat
  // path, with top padding from 0 to 3.
  for (int64_t h : {1, 3, 6, 9, 14, 17}) {
    for (int64_t w_in = 1; w_in <= 135; w_in += (w_in < 20 ? 1 : w_in < 41 ? 7 : 23)) {
      for (int64_t sh : {1, 2, 3}) {
        for (int64_t sw : {1, 2}) {
          for (const Pads& pd : pads) {
            Case c{1, 1, 1, 1, {h, w_in}, {3, 3}, {sh, sw}, {1, 1}, {pd.top, pd.left}, {pd.bottom, pd.right}};
            if (h + pd.top + pd.bottom < 3 || w_in + pd.left + pd.right < 3) continue;  // no output
            const ConvGeometry g = geometry(c);
            std::vector<float> x(size_t(h * w_in)), wt(9);
            for (float& v : x) v = dist(rng);
            for (float& v : wt) v = dist(rng);
            const float bias = dist(rng);
            const int64_t out_h = g.out_spatial[0], out_w = g.out_spatial[1];
            std::vector<float> want(size_t(out_h * out_w)), first;
            conv_f32(g, x.data(), wt.data(), &bias, want.data());
            INFO(describe(c));
            for (const auto* isa : isas) {
              INFO(isa->name);
              for (bool clamp : {false, true}) {
                std::vector<float> got(want.size(), 99.0f);
                isa->kernel(detail::Depthwise3x3Plane{x.data(), got.data(), wt.data(), h, w_in, out_h, out_w, sh, sw,
                                                      pd.top, pd.left, bias, clamp, -0.25f, 0.5f});
                for (size_t i = 0; i < want.size(); ++i) {
                  const float expect = clamp ? std::clamp(want[i], -0.25f, 0.5f) : want[i];
                  REQUIRE(std::abs(got[i] - expect) <= 1e-5f * 13);
                }
                if (clamp) continue;
                if (first.empty()) first = got;
                CHECK(got == first);  // border and interior, AVX2 and AVX-512: the same fused sums
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("depthwise 3x3 block kernels give the plane kernels' bits", "[kernels][conv]") {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Pads {
    int64_t top, left, bottom, right;
  };
  // Pads that keep, grow and shrink the map (a pad at the end only: the
  // last input rows and columns are read by no output), every row and
  // column stride the plane kernels take, and sizes around the 8-pixel runs
  // the transposes take (a plane of 1, 7, 8, 9 pixels...).
  const Pads pads[] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 1, 1}, {2, 1, 0, 2}, {3, 1, 0, 1}};
  for (const auto* isa : detail::supported_depthwise_3x3_isas()) {
    if (!isa->block_kernel) continue;
    INFO(isa->name);
    const int64_t channels = isa->block;
    for (int64_t h : {1, 2, 3, 7, 14}) {
      for (int64_t w_in : {1, 3, 4, 7, 9, 14, 17, 30}) {
        for (int64_t sh : {1, 2, 3}) {
          for (int64_t sw : {1, 2}) {
            for (const Pads& pd : pads) {
              if (h + pd.top + pd.bottom < 3 || w_in + pd.left + pd.right < 3) continue;
              const int64_t out_h = (h + pd.top + pd.bottom - 3) / sh + 1, out_w = (w_in + pd.left + pd.right - 3) / sw + 1;
              // Planes apart by more than their size, as in a batch's slice.
              const int64_t in_stride = h * w_in + 5, out_stride = out_h * out_w + 3;
              std::vector<float> x(static_cast<size_t>(channels * in_stride)), wt(static_cast<size_t>(9 * channels)),
                  bias(static_cast<size_t>(channels));
              for (float& v : x) v = dist(rng);
              for (float& v : wt) v = dist(rng);
              for (float& v : bias) v = dist(rng);
              INFO("h=" << h << " w=" << w_in << " s=" << sh << "," << sw << " pads=" << pd.top << "," << pd.left
                        << "," << pd.bottom << "," << pd.right);
              for (bool clamp : {false, true}) {
                std::vector<float> want(size_t(channels * out_stride), 7.0f), got(want.size(), 7.0f);
                const detail::Depthwise3x3Plane shape{x.data(), got.data(), wt.data(), h, w_in, out_h, out_w, sh, sw,
                                                      pd.top, pd.left, 0.0f, clamp, -0.25f, 0.5f};
                for (int64_t ch = 0; ch < channels; ++ch) {
                  detail::Depthwise3x3Plane one = shape;
                  one.x = x.data() + ch * in_stride;
                  one.y = want.data() + ch * out_stride;
                  one.w = wt.data() + 9 * ch;
                  one.bias = bias[size_t(ch)];
                  isa->kernel(one);
                }
                isa->block_kernel(detail::Depthwise3x3Channels{shape, in_stride, out_stride, bias.data()});
                CHECK(got == want);  // and the gaps between planes untouched (7)
              }
              // No bias: zero.
              std::vector<float> want(size_t(channels * out_stride), 7.0f), got(want.size(), 7.0f);
              const detail::Depthwise3x3Plane shape{x.data(), got.data(), wt.data(), h, w_in, out_h, out_w, sh, sw,
                                                    pd.top, pd.left, 0.0f, false, 0.0f, 0.0f};
              for (int64_t ch = 0; ch < channels; ++ch) {
                detail::Depthwise3x3Plane one = shape;
                one.x = x.data() + ch * in_stride;
                one.y = want.data() + ch * out_stride;
                one.w = wt.data() + 9 * ch;
                isa->kernel(one);
              }
              isa->block_kernel(detail::Depthwise3x3Channels{shape, in_stride, out_stride, nullptr});
              CHECK(got == want);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("depthwise 3x3 clamp passes NaN through like clamp_f32", "[kernels][conv]") {
  for (const auto* isa : detail::supported_depthwise_3x3_isas()) {
    INFO(isa->name);
    std::vector<float> x(5 * 40, 1.0f), y(5 * 40);
    x[2 * 40 + 20] = std::nanf("");
    const float wt[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    isa->kernel(detail::Depthwise3x3Plane{x.data(), y.data(), wt, 5, 40, 5, 40, 1, 1, 1, 1, 0.0f, true, 0.0f, 6.0f});
    CHECK(std::isnan(y[2 * 40 + 20]));   // interior output reading the NaN
    CHECK(std::isnan(y[1 * 40 + 19]));
    CHECK(y[0] == 4.0f);                 // corner: four taps inside
    CHECK(y[2 * 40 + 10] == 6.0f);       // nine taps clamped to hi
  }
}

TEST_CASE("lanes convs of geometries alike but for one field, in turn, each get their own tables", "[kernels][conv]") {
  // The lanes path keeps each geometry's tap and pixel tables for the next
  // call (conv_fast.cpp, lanes_tables): pairs whose outputs have the same
  // shape but whose taps or pixels differ, run A, B, A on one thread.
  // Lanes where AVX2 is in force (output channels a multiple of 16, 16 or
  // more input channels); elsewhere the GEMM paths, which must agree too.
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<std::pair<Case, Case>> pairs = {
      // column strides 4 and 5 over 13 columns: 3 output columns either way
      {{1, 16, 32, 1, {5, 13}, {3, 3}, {1, 4}, {1, 1}, {0, 0}, {0, 0}},
       {1, 16, 32, 1, {5, 13}, {3, 3}, {1, 5}, {1, 1}, {0, 0}, {0, 0}}},
      // row strides 4 and 5
      {{1, 16, 32, 1, {13, 5}, {3, 3}, {4, 1}, {1, 1}, {0, 0}, {0, 0}},
       {1, 16, 32, 1, {13, 5}, {3, 3}, {5, 1}, {1, 1}, {0, 0}, {0, 0}}},
      // column dilations 1 and 2 on stride 4: 3 output columns either way
      {{1, 16, 32, 1, {5, 12}, {3, 3}, {1, 4}, {1, 1}, {0, 1}, {0, 1}},
       {1, 16, 32, 1, {5, 12}, {3, 3}, {1, 4}, {1, 2}, {0, 1}, {0, 1}}},
      // 16 and 32 input channels: K of 144 and 288 taps
      {{1, 16, 32, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
       {1, 32, 32, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}},
  };
  for (const auto& [a, b] : pairs) {
    std::vector<std::vector<float>> results;
    for (const Case* c : {&a, &b, &a}) {
      const ConvGeometry g = geometry(*c);
      REQUIRE(g.out_spatial == geometry(a).out_spatial);  // the pair differs in its tables only
      const int64_t depth = c->c * product(c->kernel);
      std::vector<float> x(size_t(c->c * product(c->in))), w(size_t(c->m * depth));
      std::mt19937 values(static_cast<uint32_t>(depth));  // A's inputs the same both times
      for (float& v : x) v = dist(values);
      for (float& v : w) v = dist(values);
      std::vector<float> want(size_t(c->m * product(g.out_spatial))), got(want.size(), 99.0f);
      conv_f32(g, x.data(), w.data(), nullptr, want.data());
      const PackedConvWeights packed(w.data(), c->m, 1, depth, c->kernel);
      conv_f32_fast(g, x.data(), w.data(), &packed, nullptr, got.data(), 1);
      INFO(describe(*c));
      for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::abs(got[i] - want[i]) <= 1e-5f * float(depth + 4));
      results.push_back(got);
    }
    CHECK(results[0] == results[2]);
  }
}
