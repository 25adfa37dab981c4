// ConvTranspose kernel: a hand-computed case, the pad/output-shape rules of
// ConvTranspose-11, and a sweep checking that it is the adjoint of conv_f32
// (<conv(x), y> == <x, conv_transpose(y)> with the same weight), which ties
// it to an independently tested kernel.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_transpose.h"

using quant::kernels::AutoPad;
using quant::kernels::conv_transpose_f32;
using quant::kernels::ConvTransposeGeometry;
using quant::kernels::Dims;
using quant::kernels::resolve_conv_transpose_pads;

TEST_CASE("conv_transpose_f32 1-D by hand", "[kernels][conv_transpose]") {
  // x = [1, 2], w = [1, 10, 100], stride 2: y = [1, 10, 100+2, 20, 200], + bias 0.5.
  ConvTransposeGeometry g;
  g.in_channels = 1;
  g.out_channels = 1;
  g.in_spatial = {2};
  g.kernel = {3};
  g.strides = {2};
  g.dilations = {1};
  g.pads_begin = {0};
  g.pads_end = {0};
  resolve_conv_transpose_pads(AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, Dims{0}, {}, g.pads_begin,
                              g.pads_end, g.out_spatial);
  REQUIRE(g.out_spatial == Dims{5});
  const std::vector<float> x = {1, 2}, w = {1, 10, 100};
  const float bias = 0.5f;
  std::vector<float> y(5);
  conv_transpose_f32(g, x.data(), w.data(), &bias, y.data());
  CHECK(y == std::vector<float>{1.5f, 10.5f, 102.5f, 20.5f, 200.5f});
  // pads 1 and 1 crop one output at each end.
  g.pads_begin = {1};
  g.pads_end = {1};
  resolve_conv_transpose_pads(AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, Dims{0}, {}, g.pads_begin,
                              g.pads_end, g.out_spatial);
  REQUIRE(g.out_spatial == Dims{3});
  std::vector<float> yc(3);
  conv_transpose_f32(g, x.data(), w.data(), nullptr, yc.data());
  CHECK(yc == std::vector<float>{10, 102, 20});
}

TEST_CASE("resolve_conv_transpose_pads: SAME and output_shape", "[kernels][conv_transpose]") {
  Dims pb, pe, out;
  // in 3, k 3, stride 2: natural 7, SAME out 6, total pad 1: SAME_UPPER puts it at the end.
  resolve_conv_transpose_pads(AutoPad::SameUpper, Dims{3}, Dims{3}, Dims{2}, Dims{1}, Dims{0}, {}, pb, pe, out);
  CHECK(out == Dims{6});
  CHECK(pb == Dims{0});
  CHECK(pe == Dims{1});
  resolve_conv_transpose_pads(AutoPad::SameLower, Dims{3}, Dims{3}, Dims{2}, Dims{1}, Dims{0}, {}, pb, pe, out);
  CHECK(pb == Dims{1});
  CHECK(pe == Dims{0});
  // output_shape one larger than natural: the extra row goes at the end.
  resolve_conv_transpose_pads(AutoPad::NotSet, Dims{3}, Dims{3}, Dims{2}, Dims{1}, Dims{0}, Dims{8}, pb, pe, out);
  CHECK(out == Dims{8});
  CHECK(pb == Dims{0});
  CHECK(pe == Dims{-1});
}

TEST_CASE("conv_transpose_f32 is the adjoint of conv_f32", "[kernels][conv_transpose]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
  };
  struct Case {
    Dims in, kernel, strides, dilations, pads_begin, pads_end;
    int64_t c, m, group;
  };
  const std::vector<Case> cases = {
      {{7}, {3}, {2}, {1}, {1}, {0}, 2, 2, 1},
      {{5, 6}, {3, 2}, {2, 3}, {1, 2}, {1, 0}, {2, 1}, 4, 2, 2},
      {{4, 5}, {2, 2}, {1, 1}, {2, 1}, {0, 1}, {1, 0}, 3, 3, 3},
      {{3, 4, 5}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}, 2, 4, 2},
  };
  for (const Case& k : cases) {
    // Conv x [1, C, in] * w [M, C/g, k] -> y [1, M, out].
    quant::kernels::ConvGeometry cg;
    cg.in_channels = k.c;
    cg.out_channels = k.m;
    cg.group = k.group;
    cg.in_spatial = k.in;
    cg.kernel = k.kernel;
    cg.strides = k.strides;
    cg.dilations = k.dilations;
    cg.pads_begin = k.pads_begin;
    cg.pads_end = k.pads_end;
    quant::kernels::resolve_conv_pads(AutoPad::NotSet, cg.in_spatial, cg.kernel, cg.strides, cg.dilations, cg.pads_begin,
                                      cg.pads_end, cg.out_spatial);
    // ConvTranspose of y [1, M, out] with the same weight, read as [M, C/g, k], back to [1, C, in]:
    // output_padding makes up for the rows the conv's stride dropped.
    ConvTransposeGeometry tg;
    tg.in_channels = k.m;
    tg.out_channels = k.c;
    tg.group = k.group;
    tg.in_spatial = cg.out_spatial;
    tg.kernel = k.kernel;
    tg.strides = k.strides;
    tg.dilations = k.dilations;
    tg.pads_begin = k.pads_begin;
    tg.pads_end = k.pads_end;
    Dims output_padding;
    for (size_t i = 0; i < k.in.size(); ++i) {
      const int64_t k_eff = (k.kernel[i] - 1) * k.dilations[i] + 1;
      output_padding.push_back((k.in[i] + k.pads_begin[i] + k.pads_end[i] - k_eff) % k.strides[i]);
    }
    resolve_conv_transpose_pads(AutoPad::NotSet, tg.in_spatial, tg.kernel, tg.strides, tg.dilations, output_padding, {},
                                tg.pads_begin, tg.pads_end, tg.out_spatial);
    REQUIRE(tg.out_spatial == k.in);
    int64_t in_n = k.c, out_n = k.m, w_n = k.m * (k.c / k.group);
    for (size_t i = 0; i < k.in.size(); ++i) {
      in_n *= k.in[i];
      out_n *= cg.out_spatial[i];
      w_n *= k.kernel[i];
    }
    const auto x = random(size_t(in_n)), y = random(size_t(out_n)), w = random(size_t(w_n));
    std::vector<float> conv_x(static_cast<size_t>(out_n)), convt_y(static_cast<size_t>(in_n));
    quant::kernels::conv_f32(cg, x.data(), w.data(), nullptr, conv_x.data());
    conv_transpose_f32(tg, y.data(), w.data(), nullptr, convt_y.data());
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += double(conv_x[i]) * y[i];
    for (size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * convt_y[i];
    INFO("case with " << k.in.size() << " spatial dims, group " << k.group);
    CHECK(std::abs(lhs - rhs) < 1e-4 * (1 + std::abs(lhs)));
  }
}
