// The fast integer convolution (qconv_fast.h) against the reference kernels
// (qconv_s32, qlinear_conv), bit for bit: every ISA this CPU runs, AMX included (weights
// packed for each), pointwise / wide / im2col / grouped / depthwise geometries with
// padding, strides, dilations and tails, 1-D to 3-D, every 8-bit type pair,
// weight zero points absent / per tensor / per channel, both requantization
// modes, 1 and 2 threads.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/qconv_fast.h"
#include "tests/kernels/conv_case.h"
#include "tests/kernels/random_ints.h"

using namespace quant::kernels;

using quant::testing::random_values;

namespace {

using Case = quant::testing::ConvCase;
using quant::testing::geometry;

std::vector<Case> cases() {
  return {
      {1, 5, 7, 1, {6, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},      // pointwise, 54 pixels (panel tail)
      {2, 16, 24, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},    // pointwise, batch 2
      {1, 3, 9, 1, {7, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},      // 3x3 pad 1, K = 27
      {1, 4, 6, 1, {9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}},      // stride 2, asymmetric pads
      {1, 6, 4, 2, {5, 6}, {2, 3}, {1, 2}, {2, 1}, {0, 1}, {1, 0}},      // groups, dilation
      {1, 8, 8, 8, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},      // depthwise stride 1
      {2, 5, 5, 5, {8, 11}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 1}},     // depthwise stride 2
      {1, 3, 3, 3, {10, 10}, {5, 5}, {3, 1}, {1, 2}, {2, 2}, {2, 2}},    // depthwise 5x5, stride 3 / dilation 2
      {1, 4, 4, 4, {9, 12}, {5, 5}, {2, 1}, {1, 1}, {2, 2}, {2, 2}},     // depthwise 5x5, line stride 1
      {1, 2, 2, 2, {6, 13}, {5, 5}, {1, 2}, {1, 1}, {2, 1}, {2, 3}},     // depthwise 5x5, line stride 2
      {1, 3, 3, 3, {8, 10}, {3, 3}, {1, 2}, {2, 2}, {2, 1}, {1, 2}},     // depthwise 3x3, dilation 2, stride 2
      {1, 2, 2, 2, {3, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},      // depthwise, line narrower than the kernel
      {1, 3, 3, 3, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},    // depthwise 3x3 stride 2 (padded plane)
      // depthwise 3x3 in blocks of 8 channels (AVX2, fused output stage):
      // two blocks and 3 channels one by one, batch 2; pads that shrink,
      // keep and grow the map; runs of 8 pixels with tails of 1 to 7
      {2, 19, 19, 19, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 16, 16, {5, 23}, {3, 3}, {1, 1}, {1, 1}, {0, 1}, {2, 0}},
      {1, 8, 8, 8, {13, 9}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},
      {1, 8, 8, 8, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // depthwise 5x5 in blocks of 8 channels (stride 2 up to 14 x 14,
      // stride 1 up to 7 x 7): blocks and channels one by one, batch 2;
      // pads that shrink and grow the map; one pixel
      {2, 19, 19, 19, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}},
      {1, 8, 8, 8, {13, 9}, {5, 5}, {2, 2}, {1, 1}, {1, 2}, {2, 1}},
      {1, 16, 16, 16, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
      {1, 8, 8, 8, {6, 8}, {5, 5}, {1, 1}, {1, 1}, {0, 1}, {2, 0}},
      {1, 8, 8, 8, {1, 1}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
      {1, 3, 3, 3, {7, 9}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}},      // depthwise 5x5 stride 2 (padded plane)
      {1, 2, 2, 2, {6, 5}, {5, 5}, {1, 1}, {1, 1}, {2, 1}, {2, 3}},      // depthwise 5x5 stride 1, uneven pads
      {1, 3, 4, 1, {13}, {3}, {1}, {1}, {2}, {0}},                       // 1-D
      {1, 2, 3, 1, {3, 4, 5}, {2, 2, 3}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1}, {0, 1, 1}},  // 3-D
      {1, 40, 9, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},     // K = 360
      {1, 3, 10, 1, {5, 41}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}},    // stride 2, lines of 20 (vector gather)
      {2, 6, 10, 2, {7, 9}, {3, 3}, {1, 1}, {2, 1}, {2, 0}, {1, 2}},     // wide: groups, dilation, uneven pads, batch 2
      {1, 8, 20, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},     // wide: 7 x 7 map (63 wide pixels), 8 x 32 tiles
      {1, 4, 9, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 1}},      // wide: a padded 1x1
      {1, 3, 8, 1, {20, 22}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},    // wide, stride 2: four phases (resnet's stem)
      {1, 4, 8, 1, {12, 11}, {3, 3}, {2, 2}, {2, 2}, {2, 1}, {1, 2}},    // wide, stride 2, dilation 2
      {1, 3, 5, 1, {11, 13}, {3, 3}, {3, 3}, {1, 1}, {1, 2}, {0, 1}},    // wide, stride 3
      {1, 6, 5, 1, {12, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},     // 1x1 stride 2 (downsample): one phase of four, to y directly
      {1, 4, 5, 1, {9, 11}, {1, 1}, {2, 3}, {1, 1}, {1, 0}, {0, 1}},     // padded 1x1, strides 2 x 3: one phase of six
      {1, 3, 4, 1, {9, 10}, {1, 3}, {2, 2}, {1, 1}, {0, 1}, {0, 1}},     // 1x3 stride 2: two phases of four
      {1, 2, 3, 1, {11, 12}, {2, 2}, {2, 2}, {2, 2}, {1, 1}, {1, 1}},    // dilation 2 = stride 2: one phase, four taps
      {2, 8, 12, 2, {9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},    // direct: groups of 4 channels, batch 2
      {1, 16, 24, 1, {13, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},  // direct, stride 2: phase planes by quad
      {1, 12, 9, 1, {6, 40}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},    // direct, dilation 2, 2 x 32-pixel tiles + tail
      {1, 8, 5, 1, {9, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},     // direct strided 1x1 (one tap, to y)
      // Stride-2 lines of 17 pixels or more: the input interleaved straight
      // from every other byte (interleave_stride2_avx2), its last line
      // ending at the plane's last byte (41 wide), and with padding between
      // the lines (3x3 pad 1).
      {1, 8, 5, 1, {6, 40}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 8, 6, 1, {5, 41}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 16, 9, 1, {9, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 6, 1, {37}, {3}, {2}, {1}, {1}, {1}},                       // direct 1-D, stride 2
      {1, 8, 10, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},     // direct, lines of 5 (pw 6): four line stores per panel
      {1, 8, 12, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},     // pointwise 7 x 7: a last panel of 1 column
      {1, 8, 9, 1, {5, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},     // pointwise, 50 pixels: a last panel of 2
      {1, 4, 6, 1, {3, 17}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},     // pointwise, 51 pixels: a last panel of 3
      {1, 8, 8, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},    // pointwise 14 x 14: a last panel of 4
      {1, 8, 8, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},    // direct 14 x 14, 210 wide pixels: last panel 2
      {1, 8, 7, 1, {6, 9}, {5, 5}, {1, 1}, {1, 1}, {2, 1}, {1, 2}},     // direct 5x5, uneven pads: lines share padding (pw 11 of 12)
      {1, 8, 6, 1, {5, 9}, {3, 3}, {1, 1}, {1, 2}, {3, 1}, {1, 3}},     // direct, dilation 2: reads wrap into the next line's left padding
      // 1x1 stride 2 on lines of 4, 5, 8, 9, 15, 17, 29 and 34 output pixels:
      // every branch of the strided copy, odd input widths ending the read
      // at the tensor's last byte (a sanitizer build sees any read past it)
      {1, 2, 3, 1, {3, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 15}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 17}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 29}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 33}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 57}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {3, 68}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 2, 3, 1, {4, 40}, {1, 33}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},    // too many dropped columns: gathered
      {1, 16, 16, 16, {33, 35}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, // depthwise, long padded plane
      {1, 16, 16, 16, {33, 35}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}}, // depthwise 5x5 stride 2, long padded plane
      // AMX (32-row panels, chunks of 16 groups): a direct 3x3 whose taps
      // are whole chunks (64 channels) and 40 output channels (a second
      // panel of 8 rows); a pointwise conv of 18 quads (a last chunk of 2,
      // read on past the planes) and 48 channels (16 rows in the second
      // panel); a strided 3x3 through packed panels (K = 576, 36 chunks)
      {1, 64, 40, 1, {6, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 72, 48, 1, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 64, 33, 1, {9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
  };
}

// The references are computed once per case and checked against every ISA's
// packing and kernels (each ISA used to draw its own case and recompute them:
// under the sanitizer build's -O0 the references took most of this sweep).
template <class TX, class TW>
void sweep(uint32_t seed) {
  std::mt19937 rng(seed);
  const auto isas = detail::supported_conv_qgemm_isas();
  for (const Case& c : cases()) {
    const ConvGeometry g = geometry(c);
    const int64_t depth = g.in_channels / g.group * element_count(g.kernel);
    const auto x = random_values<TX>(rng, static_cast<size_t>(g.batch * g.in_channels * element_count(g.in_spatial)));
    const auto w = random_values<TW>(rng, static_cast<size_t>(g.out_channels * depth));
    const size_t out_size = static_cast<size_t>(g.batch * g.out_channels * element_count(g.out_spatial));
    std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
    std::vector<int32_t> bias(static_cast<size_t>(g.out_channels));
    for (auto& b : bias) b = std::uniform_int_distribution<int32_t>(-30000, 30000)(rng);
    std::vector<float> mult(static_cast<size_t>(g.out_channels));
    for (auto& v : mult) v = std::uniform_real_distribution<float>(0.0005f, 0.02f)(rng);
    const TX xzp = random_values<TX>(rng, 1)[0];
    std::vector<std::vector<TW>> zps = {{}, random_values<TW>(rng, 1), random_values<TW>(rng, size_t(g.out_channels))};
    for (const auto& zp : zps) {
      QConvArgs<TX, TW> a;
      a.x = x.data(), a.x_zero_point = xzp, a.w = w.data();
      a.w_zero_point = zp.empty() ? nullptr : zp.data(), a.w_zero_point_count = static_cast<int64_t>(zp.size());
      std::vector<int32_t> want(out_size);
      qconv_s32(g, a, want.data(), workspace.data());
      // Per requantization mode and granularity: the u8 output with a bias,
      // the s8 output without, the s8 output with a bias and a narrowed
      // clamp (a folded Relu/Clip: vector and scalar output stages).
      struct Requantized {
        Requantizer r, rs, clamped;
        std::vector<uint8_t> y;
        std::vector<int8_t> s, s_clamped;
      };
      std::vector<Requantized> refs;
      for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
        for (bool per_channel : {false, true}) {
          const std::vector<float> m = per_channel ? mult : std::vector<float>{mult[0]};
          Requantized q{make_requantizer(mode, m, 77), make_requantizer(mode, m, -20), make_requantizer(mode, m, -20),
                        std::vector<uint8_t>(out_size), std::vector<int8_t>(out_size), std::vector<int8_t>(out_size)};
          q.clamped.clamp_lo = -20, q.clamped.clamp_hi = 60;
          qlinear_conv<TX, TW, uint8_t>(g, a, bias.data(), q.r, q.y.data(), workspace.data());
          qlinear_conv<TX, TW, int8_t>(g, a, nullptr, q.rs, q.s.data(), workspace.data());
          qlinear_conv<TX, TW, int8_t>(g, a, bias.data(), q.clamped, q.s_clamped.data(), workspace.data());
          refs.push_back(std::move(q));
        }
      }
      for (const detail::QGemmIsa* isa : isas) {
        // Taps as the interpreter passes them: tap-major K where the ISA
        // and the channel count call for it (the direct path).
        const PackedQConvWeights packed(w.data(), g.out_channels, g.group, depth, a.w_zero_point, a.w_zero_point_count,
                                        *isa, element_count(g.kernel));
        INFO("isa=" << isa->name << " case in=" << c.in.size() << "-D C=" << c.in_channels << " M=" << c.out_channels
                    << " group=" << c.group << " xzp=" << int(xzp) << " zp count=" << zp.size());
        for (int threads : {1, 2}) {
          std::vector<int32_t> got(out_size, -7);
          qconv_fast<TX, int32_t>(g, x.data(), xzp, packed, nullptr, nullptr, got.data(), threads);
          REQUIRE(got == want);
        }
        for (size_t i = 0; i < refs.size(); ++i) {
          const Requantized& q = refs[i];
          INFO("mode=" << (i < 2 ? "float" : "fixed") << " per_channel=" << (i % 2 == 1));
          std::vector<uint8_t> got_y(out_size, 1);
          qconv_fast<TX, uint8_t>(g, x.data(), xzp, packed, bias.data(), &q.r, got_y.data(), 2);
          REQUIRE(got_y == q.y);
          std::vector<int8_t> got_s(out_size, 1);
          qconv_fast<TX, int8_t>(g, x.data(), xzp, packed, nullptr, &q.rs, got_s.data(), 1);
          REQUIRE(got_s == q.s);
          qconv_fast<TX, int8_t>(g, x.data(), xzp, packed, bias.data(), &q.clamped, got_s.data(), 2);
          REQUIRE(got_s == q.s_clamped);
          for (int8_t v : got_s) REQUIRE((v >= -20 && v <= 60));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("qconv_fast u8 x s8 matches the reference bit for bit", "[kernels][qconv_fast]") { sweep<uint8_t, int8_t>(21); }
TEST_CASE("qconv_fast u8 x u8 matches the reference bit for bit", "[kernels][qconv_fast]") { sweep<uint8_t, uint8_t>(22); }
TEST_CASE("qconv_fast s8 x s8 matches the reference bit for bit", "[kernels][qconv_fast]") { sweep<int8_t, int8_t>(23); }
TEST_CASE("qconv_fast s8 x u8 matches the reference bit for bit", "[kernels][qconv_fast]") { sweep<int8_t, uint8_t>(24); }

namespace {

// A u8 x s8 conv of case c with random input, weights and per-channel
// weight zero points, drawn in that order from rng.
struct RandomConv {
  RandomConv(const Case& c, std::mt19937& rng)
      : g(geometry(c)),
        depth(g.in_channels * element_count(g.kernel)),
        M(g.out_channels),
        x(random_values<uint8_t>(rng, static_cast<size_t>(g.in_channels * element_count(g.in_spatial)))),
        w(random_values<int8_t>(rng, static_cast<size_t>(M * depth))),
        zp(random_values<int8_t>(rng, static_cast<size_t>(M))) {}
  ConvGeometry g;
  int64_t depth, M;
  std::vector<uint8_t> x;
  std::vector<int8_t> w, zp;
};

// One u8 x s8 conv with per-channel weight zero points against qconv_s32 on
// each thread count, bit for bit.
void check_large(const Case& c, uint8_t xzp, uint32_t seed, std::initializer_list<int> thread_counts) {
  std::mt19937 rng(seed);
  const RandomConv rc(c, rng);
  const ConvGeometry& g = rc.g;
  const int64_t depth = rc.depth, M = rc.M;
  const auto& x = rc.x;
  const auto &w = rc.w, &zp = rc.zp;
  QConvArgs<uint8_t, int8_t> a;
  a.x = x.data(), a.x_zero_point = xzp, a.w = w.data(), a.w_zero_point = zp.data(), a.w_zero_point_count = M;
  std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
  const size_t out_size = static_cast<size_t>(M * element_count(g.out_spatial));
  std::vector<int32_t> want(out_size);
  qconv_s32(g, a, want.data(), workspace.data());
  const PackedQConvWeights packed(w.data(), M, 1, depth, zp.data(), M);
  for (int threads : thread_counts) {
    std::vector<int32_t> got(out_size, -7);
    qconv_fast<uint8_t, int32_t>(g, x.data(), xzp, packed, nullptr, nullptr, got.data(), threads);
    INFO("threads " << threads);
    REQUIRE(got == want);
  }
}

}  // namespace

TEST_CASE("qconv_fast splits a large layer into pixel blocks", "[kernels][qconv_fast]") {
  // K = 64 * 9 = 576: blocks of 336 pixels, so 40 x 40 = 1600 outputs take five
  // blocks (the last one partial), over 2 threads.
  check_large(Case{1, 64, 20, 1, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 9, 31, {2});
}

TEST_CASE("qconv_fast splits a small map into blocks of whole panels as even as they go", "[kernels][qconv_fast]") {
  // 14 x 14 = 196 pixels in two blocks of 96 and 100 (not 112 and 84); on 3
  // threads, blocks of 64, 64 and 68.
  check_large(Case{1, 96, 24, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}, 3, 33, {2, 3});
}

TEST_CASE("qconv_fast splits a small map's one block by output channels", "[kernels][qconv_fast]") {
  // A 7 x 7 map: one block of 49 pixels (4 panels, the last of one column)
  // with its column sums (weight zero points), split by output channels.
  // Light layers (one chunk per thread) pack the block in each task;
  // heavy ones (16M multiply-adds and more: several chunks per thread) pack
  // it once beforehand, every thread a run of whole panels. Pointwise (rows
  // read in place), gathered (stride 2) and wide (3x3, padded planes).
  check_large(Case{1, 40, 24, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}, 7, 34, {2, 3});
  check_large(Case{1, 40, 24, 1, {13, 13}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}, 7, 35, {2, 3});
  check_large(Case{1, 12, 24, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 7, 36, {2, 3});
  check_large(Case{1, 1024, 352, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}, 7, 37, {2, 3});
  check_large(Case{1, 1024, 352, 1, {13, 13}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}, 7, 38, {2});
  check_large(Case{1, 128, 320, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 7, 39, {2});
}

TEST_CASE("qconv_fast splits a heavy layer on a small map by output channels", "[kernels][qconv_fast]") {
  // 7 x 7 outputs (too few pixels for two blocks per thread), K = 256 * 9 =
  // 2304, 160 channels: 18M multiply-adds, enough for several tasks per
  // thread, so one pixel block is packed once and shared by chunks of rows.
  check_large(Case{1, 256, 160, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 5, 32, {1, 2, 3});
}

namespace {

// Random int32 biases and per-channel float multipliers in [lo, hi) with
// output zero point 77: an output stage for M channels.
std::pair<std::vector<int32_t>, Requantizer> random_output_stage(std::mt19937& rng, int64_t M, float lo, float hi) {
  std::vector<int32_t> bias(static_cast<size_t>(M));
  for (auto& b : bias) b = std::uniform_int_distribution<int32_t>(-30000, 30000)(rng);
  std::vector<float> mult(static_cast<size_t>(M));
  for (auto& v : mult) v = std::uniform_real_distribution<float>(lo, hi)(rng);
  return {std::move(bias), make_requantizer(RequantMode::Float, mult, 77)};
}

}  // namespace

TEST_CASE("qconv_fast splits direct blocks the threads cannot share evenly by output channels too",
          "[kernels][qconv_fast]") {
  // A 14 x 14 map (224 wide pixels), K = 256 * 9 and 80 channels: enough
  // work for seven 32-pixel direct blocks, which 2 and 3 threads cannot
  // share evenly, so each block's output channels are cut in as many chunks
  // as threads (resnet18's layer3, narrower).
  std::mt19937 rng(33);
  const Case c{1, 256, 80, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  const ConvGeometry g = geometry(c);
  const int64_t depth = g.in_channels * element_count(g.kernel), M = g.out_channels;
  const auto x = random_values<uint8_t>(rng, static_cast<size_t>(g.in_channels * element_count(g.in_spatial)));
  const auto w = random_values<int8_t>(rng, static_cast<size_t>(M * depth));
  const auto [bias, r] = random_output_stage(rng, M, 0.00005f, 0.0002f);
  QConvArgs<uint8_t, int8_t> a;
  a.x = x.data(), a.x_zero_point = 11, a.w = w.data();
  std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
  const size_t out_size = static_cast<size_t>(M * element_count(g.out_spatial));
  std::vector<uint8_t> want(out_size);
  qlinear_conv<uint8_t, int8_t, uint8_t>(g, a, bias.data(), r, want.data(), workspace.data());
  for (const detail::QGemmIsa* isa : detail::supported_conv_qgemm_isas()) {
    const PackedQConvWeights packed(w.data(), M, 1, depth, static_cast<const int8_t*>(nullptr), 0, *isa,
                                    element_count(g.kernel));
    for (int threads : {1, 2, 3}) {
      std::vector<uint8_t> got(out_size, 1);
      qconv_fast<uint8_t, uint8_t>(g, x.data(), 11, packed, bias.data(), &r, got.data(), threads);
      INFO("isa=" << isa->name << " threads " << threads);
      REQUIRE(got == want);
    }
  }
}

TEST_CASE("qconv_fast packs conv weights for AMX where the CPU has it, depthwise ones for the next best ISA",
          "[kernels][qconv_fast]") {
  const bool amx = detail::kQGemmIsaAmx && cpu_supports("amx");
  CHECK(detail::best_conv_qgemm_isa().amx_tiles == amx);
  const std::vector<int8_t> w(8 * 9, 1);
  const PackedQConvWeights dense(w.data(), 8, 1, 9, static_cast<const int8_t*>(nullptr), 0);
  CHECK(dense.isa().amx_tiles == amx);
  const PackedQConvWeights depthwise(w.data(), 8, 8, 9, static_cast<const int8_t*>(nullptr), 0);
  CHECK(&depthwise.isa() == &detail::best_qgemm_isa());
}

TEST_CASE("qconv_fast's AMX kernels run in a thread that loaded their tile configuration itself first",
          "[kernels][qconv_fast]") {
  // kernel_bench's peak loop calls amx_configure_thread() before any kernel
  // has: GCC 12's _tile_loadconfig let the compiler drop the configuration's
  // stores there, and LDTILECFG faulted (fixed with a 64-byte asm operand).
  if (!detail::best_conv_qgemm_isa().amx_tiles) SUCCEED("no AMX on this CPU");
  else {
    const Case c{1, 64, 40, 1, {6, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    const ConvGeometry g = geometry(c);
    std::mt19937 rng(31);
    const int64_t depth = g.in_channels * element_count(g.kernel);
    const auto x = random_values<uint8_t>(rng, static_cast<size_t>(g.in_channels * element_count(g.in_spatial)));
    const auto w = random_values<int8_t>(rng, static_cast<size_t>(g.out_channels * depth));
    QConvArgs<uint8_t, int8_t> a;
    a.x = x.data(), a.x_zero_point = 9, a.w = w.data();
    const size_t out_size = static_cast<size_t>(g.out_channels * element_count(g.out_spatial));
    std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
    const Requantizer r = make_requantizer(RequantMode::Float, std::vector<float>{0.001f}, 5);
    std::vector<uint8_t> want(out_size), got(out_size, 1);
    qlinear_conv<uint8_t, int8_t, uint8_t>(g, a, nullptr, r, want.data(), workspace.data());
    const PackedQConvWeights packed(w.data(), g.out_channels, 1, depth, static_cast<const int8_t*>(nullptr), 0,
                                    detail::best_conv_qgemm_isa(), element_count(g.kernel));
    std::thread t([&] {
      detail::amx_configure_thread();
      qconv_fast<uint8_t, uint8_t>(g, x.data(), 9, packed, nullptr, &r, got.data(), 1);
    });
    t.join();
    REQUIRE(got == want);
  }
}

namespace {

// One conv on the AVX2 kernels against the reference, bit for bit, on each
// thread count: fused uint8 output (the direct path) and int32 output with
// weight zero points (packed blocks, the one-panel kernel). Its weights must
// be widened (not pair-bounded), and kept as int8 where their widened form
// exceeds the L2 (widen_on_use).
void check_avx2_wide(const Case& c, uint32_t seed, std::initializer_list<int> thread_counts) {
  const detail::QGemmIsa* isa = nullptr;
  for (const detail::QGemmIsa* i : detail::supported_conv_qgemm_isas())
    if (i == detail::kQGemmIsaAvx2) isa = i;
  if (!isa) {
    SUCCEED("no AVX2 kernels here");
    return;
  }
  std::mt19937 rng(seed);
  const RandomConv rc(c, rng);
  const ConvGeometry& g = rc.g;
  const int64_t depth = rc.depth, M = rc.M;
  const auto& x = rc.x;
  const auto &w = rc.w, &zp = rc.zp;
  const auto [bias, r] = random_output_stage(rng, M, 0.00002f, 0.0001f);
  std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
  const size_t out_size = static_cast<size_t>(M * element_count(g.out_spatial));

  QConvArgs<uint8_t, int8_t> a;
  a.x = x.data(), a.x_zero_point = 11, a.w = w.data();
  std::vector<uint8_t> want(out_size);
  qlinear_conv<uint8_t, int8_t, uint8_t>(g, a, bias.data(), r, want.data(), workspace.data());
  const PackedQConvWeights packed(w.data(), M, 1, depth, static_cast<const int8_t*>(nullptr), 0, *isa,
                                  element_count(g.kernel));
  REQUIRE(packed.widened());
  REQUIRE(packed.widen_on_use() == (2 * M * depth > l2_cache_bytes()));
  for (int threads : thread_counts) {
    std::vector<uint8_t> got(out_size, 1);
    qconv_fast<uint8_t, uint8_t>(g, x.data(), 11, packed, bias.data(), &r, got.data(), threads);
    INFO("fused, threads " << threads);
    REQUIRE(got == want);
  }

  a.w_zero_point = zp.data(), a.w_zero_point_count = M;
  std::vector<int32_t> want32(out_size);
  qconv_s32(g, a, want32.data(), workspace.data());
  const PackedQConvWeights packed_zp(w.data(), M, 1, depth, zp.data(), M, *isa, element_count(g.kernel));
  REQUIRE(packed_zp.widen_on_use() == packed.widen_on_use());
  for (int threads : thread_counts) {
    std::vector<int32_t> got(out_size, -7);
    qconv_fast<uint8_t, int32_t>(g, x.data(), 11, packed_zp, nullptr, nullptr, got.data(), threads);
    INFO("int32 with zero points, threads " << threads);
    REQUIRE(got == want32);
  }
}

}  // namespace

TEST_CASE("qconv_fast reads weights larger than the L2 once per block, widened per panel, with the same bits",
          "[kernels][qconv_fast]") {
  // resnet18's layer4 3x3 conv (512 channels, K = 4608) on its 7 x 7 map:
  // 2.3 MiB of int8 weights, which widened (4.5 MiB) fit no L2 of this
  // project's hosts: one block, split by output channels on 2 threads.
  check_avx2_wide(Case{1, 512, 512, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 41, {1, 2});
  // layer3's (256 channels, K = 2304, 14 x 16 wide pixels; 1.1 MiB
  // widened): more than half of a 1-2 MiB L2, so blocks of up to 5/8 of it,
  // each split by output channels on 2 and 3 threads.
  check_avx2_wide(Case{1, 256, 256, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 42, {1, 2, 3});
}
