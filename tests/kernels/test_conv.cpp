#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "libquant/kernels/conv.h"

using quant::kernels::AutoPad;
using quant::kernels::conv_f32;
using quant::kernels::ConvGeometry;
using quant::kernels::Dims;
using quant::kernels::resolve_conv_pads;

namespace {

std::vector<float> iota_from(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + float(i);
  return v;
}

// Geometry with stride/dilation 1 and explicit pads; out_spatial resolved.
ConvGeometry make_geometry(int64_t batch, int64_t c, int64_t m, int64_t group, Dims in, Dims kernel, Dims pads_begin,
                           Dims pads_end, Dims strides = {}, Dims dilations = {}) {
  ConvGeometry g;
  g.batch = batch;
  g.in_channels = c;
  g.out_channels = m;
  g.group = group;
  g.in_spatial = in;
  g.kernel = kernel;
  g.strides = strides.empty() ? Dims(in.size(), 1) : strides;
  g.dilations = dilations.empty() ? Dims(in.size(), 1) : dilations;
  g.pads_begin = pads_begin;
  g.pads_end = pads_end;
  resolve_conv_pads(AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                    g.out_spatial);
  return g;
}

int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

// Straightforward N-d reference: for each output element, walk every kernel
// tap with an odometer and bounds-check the input index.
std::vector<float> naive_conv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
                              const float* bias) {
  const size_t r = g.in_spatial.size();
  const int64_t out_plane = product(g.out_spatial), in_plane = product(g.in_spatial), kvol = product(g.kernel);
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  std::vector<float> y(static_cast<size_t>(g.batch * g.out_channels * out_plane));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      for (int64_t o = 0; o < out_plane; ++o) {
        Dims oc(r);
        for (int64_t rem = o, i = int64_t(r) - 1; i >= 0; --i) {
          oc[size_t(i)] = rem % g.out_spatial[size_t(i)];
          rem /= g.out_spatial[size_t(i)];
        }
        double acc = bias ? bias[m] : 0.0;
        for (int64_t cc = 0; cc < cg; ++cc) {
          const int64_t c = (m / mg) * cg + cc;
          for (int64_t t = 0; t < kvol; ++t) {
            Dims kc(r);
            for (int64_t rem = t, i = int64_t(r) - 1; i >= 0; --i) {
              kc[size_t(i)] = rem % g.kernel[size_t(i)];
              rem /= g.kernel[size_t(i)];
            }
            int64_t in_index = 0;
            bool inside = true;
            for (size_t i = 0; i < r; ++i) {
              const int64_t p = oc[i] * g.strides[i] + kc[i] * g.dilations[i] - g.pads_begin[i];
              inside = inside && p >= 0 && p < g.in_spatial[i];
              in_index = in_index * g.in_spatial[i] + p;
            }
            if (!inside) continue;
            acc += double(x[size_t((n * g.in_channels + c) * in_plane + in_index)]) *
                   double(w[size_t((m * cg + cc) * kvol + t)]);
          }
        }
        y[size_t((n * g.out_channels + m) * out_plane + o)] = float(acc);
      }
    }
  }
  return y;
}

}  // namespace

TEST_CASE("resolve_conv_pads", "[kernels][conv]") {
  Dims pb, pe, out;
  SECTION("explicit pads") {
    pb = {1};
    pe = {1};
    resolve_conv_pads(AutoPad::NotSet, Dims{5}, Dims{3}, Dims{2}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{3});
    pb = {0};
    pe = {0};
    resolve_conv_pads(AutoPad::NotSet, Dims{7}, Dims{3}, Dims{1}, Dims{2}, pb, pe, out);
    CHECK(out == Dims{3});
    pb = {0};
    pe = {0};
    resolve_conv_pads(AutoPad::NotSet, Dims{2}, Dims{3}, Dims{1}, Dims{1}, pb, pe, out);
    CHECK(out[0] < 1);  // kernel does not fit: caller rejects
  }
  SECTION("VALID zeroes pads") {
    pb = {3, 3};
    pe = {3, 3};
    resolve_conv_pads(AutoPad::Valid, Dims{5, 6}, Dims{3, 3}, Dims{2, 1}, Dims{1, 1}, pb, pe, out);
    CHECK(out == Dims{2, 4});
    CHECK(pb == Dims{0, 0});
    CHECK(pe == Dims{0, 0});
  }
  SECTION("SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning") {
    resolve_conv_pads(AutoPad::SameUpper, Dims{4, 6, 5}, Dims{2, 3, 3}, Dims{1, 2, 2}, Dims{1, 1, 2}, pb, pe, out);
    CHECK(out == Dims{4, 3, 3});
    CHECK(pb == Dims{0, 0, 2});
    CHECK(pe == Dims{1, 1, 2});
    resolve_conv_pads(AutoPad::SameLower, Dims{4, 6, 5}, Dims{2, 3, 3}, Dims{1, 2, 2}, Dims{1, 1, 2}, pb, pe, out);
    CHECK(out == Dims{4, 3, 3});
    CHECK(pb == Dims{1, 1, 2});
    CHECK(pe == Dims{0, 0, 2});
  }
  SECTION("SAME never pads negatively") {
    resolve_conv_pads(AutoPad::SameUpper, Dims{5}, Dims{1}, Dims{3}, Dims{1}, pb, pe, out);
    CHECK(out == Dims{2});
    CHECK(pb == Dims{0});
    CHECK(pe == Dims{0});
  }
}

TEST_CASE("conv_f32 hand-computed 2-D cases", "[kernels][conv]") {
  const std::vector<float> x9 = iota_from(9, 1);  // 3x3: 1..9
  SECTION("valid 2x2 kernel with bias") {
    const ConvGeometry g = make_geometry(1, 1, 1, 1, {3, 3}, {2, 2}, {0, 0}, {0, 0});
    const std::vector<float> w = {1, 0, 0, -1};
    const float bias = 0.5f;
    std::vector<float> y(4);
    conv_f32(g, x9.data(), w.data(), &bias, y.data());
    CHECK(y == std::vector<float>{-3.5f, -3.5f, -3.5f, -3.5f});
  }
  SECTION("asymmetric pads") {
    const ConvGeometry g = make_geometry(1, 1, 1, 1, {3, 3}, {3, 3}, {1, 0}, {0, 1});
    REQUIRE(g.out_spatial == Dims{2, 2});
    const std::vector<float> w(9, 1.0f);
    std::vector<float> y(4);
    conv_f32(g, x9.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{21, 16, 45, 33});
  }
  SECTION("stride 2 with padding") {
    const std::vector<float> x16 = iota_from(16, 1);
    const ConvGeometry g = make_geometry(1, 1, 1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {2, 2});
    REQUIRE(g.out_spatial == Dims{2, 2});
    const std::vector<float> w(9, 1.0f);
    std::vector<float> y(4);
    conv_f32(g, x16.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{14, 30, 57, 99});
  }
  SECTION("dilation 2") {
    const std::vector<float> x25 = iota_from(25, 1);
    const ConvGeometry g = make_geometry(1, 1, 1, 1, {5, 5}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, {2, 2});
    REQUIRE(g.out_spatial == Dims{3, 3});
    const std::vector<float> w(4, 1.0f);
    std::vector<float> y(9);
    conv_f32(g, x25.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{28, 32, 36, 48, 52, 56, 68, 72, 76});
  }
}

TEST_CASE("conv_f32 groups", "[kernels][conv]") {
  const std::vector<float> x = iota_from(8, 1);  // [1,2,2,2]: c0 = 1..4, c1 = 5..8
  SECTION("depthwise") {
    const ConvGeometry g = make_geometry(1, 2, 2, 2, {2, 2}, {1, 1}, {0, 0}, {0, 0});
    const std::vector<float> w = {2, -1};
    std::vector<float> y(8);
    conv_f32(g, x.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{2, 4, 6, 8, -5, -6, -7, -8});
  }
  SECTION("depthwise with channel multiplier 2") {
    const ConvGeometry g = make_geometry(1, 2, 4, 2, {2, 2}, {1, 1}, {0, 0}, {0, 0});
    const std::vector<float> w = {1, 2, 3, 4};
    const std::vector<float> bias = {0, 0, 0, 100};
    std::vector<float> y(16);
    conv_f32(g, x.data(), w.data(), bias.data(), y.data());
    CHECK(y == std::vector<float>{1, 2, 3, 4, 2, 4, 6, 8, 15, 18, 21, 24, 120, 124, 128, 132});
  }
  SECTION("two groups of two channels, 2x2 kernel") {
    // x [1,4,2,2]: channel c holds 4c+1..4c+4; one output per group sums the
    // group's two channels weighted 1 and -1 over the whole 2x2 window.
    const std::vector<float> x4 = iota_from(16, 1);
    const ConvGeometry g = make_geometry(1, 4, 2, 2, {2, 2}, {2, 2}, {0, 0}, {0, 0});
    const std::vector<float> w = {1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, 0, 0, 0, 2};
    std::vector<float> y(2);
    conv_f32(g, x4.data(), w.data(), nullptr, y.data());
    CHECK(y[0] == (1 + 2 + 3 + 4) - (5 + 6 + 7 + 8));
    CHECK(y[1] == (9 + 10 + 11 + 12) + 2 * 16);
  }
}

TEST_CASE("conv_f32 1-D and 3-D", "[kernels][conv]") {
  SECTION("1-D with padding") {
    const std::vector<float> x = {1, 2, 3, 4, 5}, w = {1, 2, 3};
    const ConvGeometry g = make_geometry(1, 1, 1, 1, {5}, {3}, {1}, {1});
    std::vector<float> y(5);
    conv_f32(g, x.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{8, 14, 20, 26, 14});
  }
  SECTION("SAME_UPPER vs SAME_LOWER") {
    const std::vector<float> x = {1, 2, 3, 4}, w = {1, 10};
    ConvGeometry g = make_geometry(1, 1, 1, 1, {4}, {2}, {0}, {0});
    resolve_conv_pads(AutoPad::SameUpper, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                      g.out_spatial);
    std::vector<float> y(4);
    conv_f32(g, x.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{21, 32, 43, 4});
    resolve_conv_pads(AutoPad::SameLower, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                      g.out_spatial);
    conv_f32(g, x.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{10, 21, 32, 43});
  }
  SECTION("3-D, batch 2") {
    const std::vector<float> x = iota_from(16, 1);  // [2,1,2,2,2]
    const std::vector<float> w(8, 1.0f);
    const ConvGeometry g = make_geometry(2, 1, 1, 1, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0});
    std::vector<float> y(2);
    conv_f32(g, x.data(), w.data(), nullptr, y.data());
    CHECK(y == std::vector<float>{36, 100});
  }
}

TEST_CASE("conv_f32 matches a naive reference over many geometries", "[kernels][conv]") {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Case {
    int64_t batch, c, m, group;
    Dims in, kernel, strides, dilations, pb, pe;
  };
  const std::vector<Case> cases = {
      {1, 3, 4, 1, {7}, {3}, {2}, {1}, {1}, {0}},
      {2, 4, 6, 2, {6, 5}, {3, 2}, {1, 2}, {2, 1}, {2, 0}, {1, 1}},
      {1, 4, 4, 4, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 2, 3, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 0, 1}},
      {1, 6, 3, 3, {8, 9}, {3, 3}, {3, 2}, {2, 3}, {2, 1}, {0, 2}},
      {3, 1, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {3, 3}, {3, 3}},  // corner windows entirely in padding
  };
  for (const Case& c : cases) {
    const ConvGeometry g =
        make_geometry(c.batch, c.c, c.m, c.group, c.in, c.kernel, c.pb, c.pe, c.strides, c.dilations);
    std::vector<float> x(size_t(c.batch * c.c * product(c.in))), w(size_t(c.m * (c.c / c.group) * product(c.kernel)));
    std::vector<float> bias(size_t(c.m));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    for (float& v : bias) v = dist(rng);
    std::vector<float> y(size_t(c.batch * c.m * product(g.out_spatial)));
    conv_f32(g, x.data(), w.data(), bias.data(), y.data());
    const std::vector<float> expected = naive_conv(g, x, w, bias.data());
    REQUIRE(y.size() == expected.size());
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::abs(y[i] - expected[i]) < 1e-5f);
  }
}
