#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "libquant/kernels/qconv.h"
#include "tests/kernels/conv_case.h"
#include "tests/kernels/random_ints.h"

using namespace quant::kernels;

using quant::testing::random_values;

namespace {

using Case = quant::testing::ConvCase;
using quant::testing::geometry;

// The defining sum, direct loops over every output and tap (N-d through a
// flat index walk), int64 truncated to int32.
template <class TX, class TW>
std::vector<int32_t> naive_conv(const ConvGeometry& g, const std::vector<TX>& x, int32_t xzp, const std::vector<TW>& w,
                                const std::vector<int32_t>& wzp) {
  const size_t rank = g.in_spatial.size();
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (size_t d = 0; d < rank; ++d) in_plane *= g.in_spatial[d], out_plane *= g.out_spatial[d], taps *= g.kernel[d];
  std::vector<int32_t> y(static_cast<size_t>(g.batch * g.out_channels * out_plane));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t grp = m / mg;
      const int64_t z = wzp.empty() ? 0 : wzp[wzp.size() == 1 ? 0 : static_cast<size_t>(m)];
      for (int64_t o = 0; o < out_plane; ++o) {
        Dims od(rank);
        for (int64_t r = o, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) od[d] = r % g.out_spatial[d], r /= g.out_spatial[d];
        int64_t sum = 0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t t = 0; t < taps; ++t) {
            Dims kd(rank);
            for (int64_t r = t, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) kd[d] = r % g.kernel[d], r /= g.kernel[d];
            bool inside = true;
            int64_t idx = 0;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t i = od[d] * g.strides[d] + kd[d] * g.dilations[d] - g.pads_begin[d];
              inside = inside && i >= 0 && i < g.in_spatial[d];
              idx = idx * g.in_spatial[d] + i;
            }
            if (!inside) continue;  // padding: x == x_zero_point contributes 0
            const int64_t xv = x[static_cast<size_t>((n * g.in_channels + grp * cg + c) * in_plane + idx)];
            const int64_t wv = w[static_cast<size_t>((m * cg + c) * taps + t)];
            sum += (xv - xzp) * (wv - z);
          }
        }
        y[static_cast<size_t>((n * g.out_channels + m) * out_plane + o)] = static_cast<int32_t>(sum);
      }
    }
  }
  return y;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // 1-D, stride, dilation, asymmetric pads
      {2, 3, 4, 1, {11}, {3}, {2}, {2}, {1}, {3}},
      // 2-D plain, 1x1
      {1, 5, 7, 1, {6, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      // 2-D 3x3 pad 1 (output pixels > one tile of 256)
      {1, 4, 6, 1, {20, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // grouped
      {2, 6, 4, 2, {7, 8}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {2, 1}},
      // depthwise with a multiplier of 2
      {1, 3, 6, 3, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      // kernel larger than the input, padding on every side
      {1, 2, 3, 1, {2, 3}, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {2, 1}},
      // 3-D
      {1, 2, 3, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 0, 1}},
  };
  return all;
}

template <class TX, class TW>
void sweep_s32() {
  std::mt19937 rng(42);
  for (const Case& c : cases()) {
    const ConvGeometry g = geometry(c);
    const int64_t taps = element_count(g.kernel);
    const auto x = random_values<TX>(rng, static_cast<size_t>(g.batch * g.in_channels * element_count(g.in_spatial)));
    const auto w = random_values<TW>(rng, static_cast<size_t>(g.out_channels * g.in_channels / g.group * taps));
    std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
    const TX x_lo = std::numeric_limits<TX>::min(), x_hi = std::numeric_limits<TX>::max();
    for (TX xzp : {TX{0}, x_lo, x_hi, TX(3)}) {
      std::vector<std::vector<TW>> zps = {{}, {std::numeric_limits<TW>::max()}, random_values<TW>(rng, size_t(g.out_channels))};
      for (const auto& zp : zps) {
        QConvArgs<TX, TW> a;
        a.x = x.data(), a.x_zero_point = xzp, a.w = w.data();
        a.w_zero_point = zp.empty() ? nullptr : zp.data(), a.w_zero_point_count = static_cast<int64_t>(zp.size());
        std::vector<int32_t> y(static_cast<size_t>(g.batch * g.out_channels * element_count(g.out_spatial)), -7);
        qconv_s32(g, a, y.data(), workspace.data());  // new[]'d storage is aligned for int32
        INFO("case in=" << c.in.size() << "-D group=" << c.group << " xzp=" << int(xzp) << " zp count=" << zp.size());
        REQUIRE(y == naive_conv(g, x, xzp, w, std::vector<int32_t>(zp.begin(), zp.end())));
      }
    }
  }
}

}  // namespace

TEST_CASE("qconv_s32 u8 x s8 equals direct convolution", "[kernels][qconv]") { sweep_s32<uint8_t, int8_t>(); }
TEST_CASE("qconv_s32 u8 x u8 equals direct convolution", "[kernels][qconv]") { sweep_s32<uint8_t, uint8_t>(); }
TEST_CASE("qconv_s32 s8 x s8 equals direct convolution", "[kernels][qconv]") { sweep_s32<int8_t, int8_t>(); }
TEST_CASE("qconv_s32 s8 x u8 equals direct convolution", "[kernels][qconv]") { sweep_s32<int8_t, uint8_t>(); }

TEST_CASE("qlinear_conv adds bias and requantizes per channel", "[kernels][qconv]") {
  std::mt19937 rng(5);
  for (const Case& c : cases()) {
    const ConvGeometry g = geometry(c);
    const auto x = random_values<uint8_t>(rng, static_cast<size_t>(g.batch * g.in_channels * element_count(g.in_spatial)));
    const auto w = random_values<int8_t>(rng, static_cast<size_t>(g.out_channels * g.in_channels / g.group *
                                                                 element_count(g.kernel)));
    std::vector<int32_t> bias(static_cast<size_t>(g.out_channels));
    std::uniform_int_distribution<int32_t> bd(-20000, 20000);
    for (auto& b : bias) b = bd(rng);
    std::vector<float> m(static_cast<size_t>(g.out_channels));
    std::uniform_real_distribution<float> md(0.0005f, 0.02f);
    for (auto& v : m) v = md(rng);
    const auto acc = naive_conv(g, x, 131, w, {});
    const int64_t plane = element_count(g.out_spatial);
    std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
    for (RequantMode mode : {RequantMode::Float, RequantMode::FixedPoint}) {
      for (bool per_channel : {false, true}) {
        const Requantizer r = make_requantizer(mode, per_channel ? m : std::vector<float>{m[0]}, 100);
        QConvArgs<uint8_t, int8_t> a;
        a.x = x.data(), a.x_zero_point = 131, a.w = w.data();
        std::vector<uint8_t> y(acc.size());
        qlinear_conv<uint8_t, int8_t, uint8_t>(g, a, bias.data(), r, y.data(), workspace.data());
        for (size_t i = 0; i < acc.size(); ++i) {
          const int64_t ch = static_cast<int64_t>(i) / plane % g.out_channels;
          const int32_t v = acc[i] + bias[static_cast<size_t>(ch)];
          int64_t want;
          if (mode == RequantMode::Float) {
            want = static_cast<int64_t>(std::nearbyint(static_cast<float>(v) * m[per_channel ? size_t(ch) : 0])) + 100;
          } else {
            want = int64_t{multiply_by_quantized_multiplier(v, r.fixed[per_channel ? size_t(ch) : 0])} + 100;
          }
          want = want < 0 ? 0 : (want > 255 ? 255 : want);
          INFO("element " << i << " per_channel=" << per_channel);
          REQUIRE(int64_t{y[i]} == want);
        }
      }
    }
  }
}

TEST_CASE("qconv_s32 shortens tiles for long patch rows", "[kernels][qconv]") {
  // 1100 channels x 2x2 taps = 4400 bytes per patch row: a tile of 256 pixels
  // would pass 1 MiB, so tiles of 238 pixels cover the 256 outputs.
  std::mt19937 rng(9);
  const Case c{1, 1100, 2, 1, {17, 17}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  const ConvGeometry g = geometry(c);
  const auto x = random_values<uint8_t>(rng, static_cast<size_t>(1100 * 17 * 17));
  const auto w = random_values<int8_t>(rng, static_cast<size_t>(2 * 1100 * 4));
  const std::vector<int8_t> zp = {3, -7};
  REQUIRE(qconv_workspace_bytes(g) <= (size_t{1} << 20) + 256 * 2 * sizeof(int32_t));
  std::vector<unsigned char> workspace(qconv_workspace_bytes(g));
  QConvArgs<uint8_t, int8_t> a;
  a.x = x.data(), a.x_zero_point = 128, a.w = w.data(), a.w_zero_point = zp.data(), a.w_zero_point_count = 2;
  std::vector<int32_t> y(2 * 16 * 16);
  qconv_s32(g, a, y.data(), workspace.data());
  REQUIRE(y == naive_conv(g, x, 128, w, std::vector<int32_t>{3, -7}));
}
