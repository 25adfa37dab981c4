#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "libquant/kernels/layout.h"

using quant::kernels::concat;
using quant::kernels::Dims;
using quant::kernels::transpose;

TEST_CASE("transpose 2-D", "[kernels][layout]") {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<float> y(6);
  transpose(x.data(), sizeof(float), Dims{2, 3}, Dims{1, 0}, y.data());
  CHECK(y == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("transpose 3-D for several element sizes", "[kernels][layout]") {
  const Dims shape = {2, 3, 4};
  for (const Dims& perm : {Dims{2, 0, 1}, Dims{1, 2, 0}, Dims{0, 2, 1}, Dims{1, 0, 2}, Dims{0, 1, 2}}) {
    const int64_t out_shape[3] = {shape[size_t(perm[0])], shape[size_t(perm[1])], shape[size_t(perm[2])]};
    auto expected_at = [&](int64_t i0, int64_t i1, int64_t i2) {
      int64_t in_idx[3];
      in_idx[perm[0]] = i0;
      in_idx[perm[1]] = i1;
      in_idx[perm[2]] = i2;
      return (in_idx[0] * 3 + in_idx[1]) * 4 + in_idx[2];
    };
    std::vector<int64_t> x64(24), y64(24);
    std::vector<uint8_t> x8(24), y8(24);
    std::vector<std::array<uint8_t, 3>> x3(24), y3(24);  // odd element size
    for (int i = 0; i < 24; ++i) {
      x64[size_t(i)] = 1000 + i;
      x8[size_t(i)] = uint8_t(i);
      x3[size_t(i)] = {uint8_t(i), uint8_t(i + 1), uint8_t(2 * i)};
    }
    transpose(x64.data(), 8, shape, perm, y64.data());
    transpose(x8.data(), 1, shape, perm, y8.data());
    transpose(x3.data(), 3, shape, perm, y3.data());
    INFO("perm " << perm[0] << perm[1] << perm[2]);
    int64_t o = 0;
    for (int64_t i0 = 0; i0 < out_shape[0]; ++i0)
      for (int64_t i1 = 0; i1 < out_shape[1]; ++i1)
        for (int64_t i2 = 0; i2 < out_shape[2]; ++i2, ++o) {
          const int64_t src = expected_at(i0, i1, i2);
          CHECK(y64[size_t(o)] == 1000 + src);
          CHECK(y8[size_t(o)] == uint8_t(src));
          CHECK(y3[size_t(o)] == x3[size_t(src)]);
        }
  }
  // Hand check: perm (2,0,1) sends x[a][b][c] to y[c][a][b]; y[1][0][2] = x[0][2][1] = 9.
  std::vector<int64_t> x(24), y(24);
  for (int i = 0; i < 24; ++i) x[size_t(i)] = i;
  transpose(x.data(), 8, shape, Dims{2, 0, 1}, y.data());
  CHECK(y[(1 * 2 + 0) * 3 + 2] == 9);
}

TEST_CASE("transpose rank 0 and 4-D", "[kernels][layout]") {
  const double s = 2.5;
  double t = 0;
  transpose(&s, sizeof(double), Dims{}, Dims{}, &t);
  CHECK(t == 2.5);
  // NCHW [1,2,2,3] -> NHWC [1,2,3,2]
  std::vector<int16_t> x(12), y(12);
  for (int i = 0; i < 12; ++i) x[size_t(i)] = int16_t(i);
  transpose(x.data(), 2, Dims{1, 2, 2, 3}, Dims{0, 2, 3, 1}, y.data());
  CHECK(y == std::vector<int16_t>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
}

TEST_CASE("concat", "[kernels][layout]") {
  const std::vector<float> a = {1, 2};         // [2,1]
  const std::vector<float> b = {3, 4, 5, 6};   // [2,2]
  const std::vector<float> c = {7, 8, 9, 10};  // [2,2]
  SECTION("axis 1") {
    const std::array<const void*, 2> in = {a.data(), b.data()};
    const std::array<Dims, 2> shapes = {Dims{2, 1}, Dims{2, 2}};
    std::vector<float> y(6);
    concat(in, shapes, 1, sizeof(float), y.data());
    CHECK(y == std::vector<float>{1, 3, 4, 2, 5, 6});
    concat(in, shapes, -1, sizeof(float), y.data());
    CHECK(y == std::vector<float>{1, 3, 4, 2, 5, 6});
  }
  SECTION("axis 0 with an empty input") {
    const std::array<const void*, 3> in = {b.data(), nullptr, c.data()};
    const std::array<Dims, 3> shapes = {Dims{2, 2}, Dims{0, 2}, Dims{2, 2}};
    std::vector<float> y(8);
    concat(in, shapes, 0, sizeof(float), y.data());
    CHECK(y == std::vector<float>{3, 4, 5, 6, 7, 8, 9, 10});
  }
  SECTION("middle axis of a 3-D int8 tensor") {
    const std::vector<int8_t> p = {1, 2, 3, 4};                 // [2,1,2]
    const std::vector<int8_t> q = {5, 6, 7, 8, 9, 10, 11, 12};  // [2,2,2]
    const std::array<const void*, 2> in = {p.data(), q.data()};
    const std::array<Dims, 2> shapes = {Dims{2, 1, 2}, Dims{2, 2, 2}};
    std::vector<int8_t> y(12);
    concat(in, shapes, 1, 1, y.data());
    CHECK(y == std::vector<int8_t>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  }
}

TEST_CASE("remap_axes: slice, reversed axis, fill and odd element size", "[kernels][layout]") {
  using quant::kernels::remap_axes;
  const std::vector<int32_t> x = {0, 1, 2, 10, 11, 12};  // [2, 3]
  const int32_t fill = -7;
  // Rows {1, -1(fill)}, columns {2, 1, 0} (reversed).
  const std::vector<Dims> maps = {Dims{1, -1}, Dims{2, 1, 0}};
  std::vector<int32_t> y(6);
  remap_axes(x.data(), sizeof(int32_t), Dims{2, 3}, maps, &fill, y.data());
  CHECK(y == std::vector<int32_t>{12, 11, 10, -7, -7, -7});
  // A run of consecutive columns takes the memcpy path.
  const std::vector<Dims> run = {Dims{0, 1, 0}, Dims{1, 2}};
  std::vector<int32_t> z(6);
  remap_axes(x.data(), sizeof(int32_t), Dims{2, 3}, run, nullptr, z.data());
  CHECK(z == std::vector<int32_t>{1, 2, 11, 12, 1, 2});
  std::vector<std::array<uint8_t, 3>> x3 = {{1, 2, 3}, {4, 5, 6}}, y3(3);
  const std::array<uint8_t, 3> f3 = {9, 9, 9};
  remap_axes(x3.data(), 3, Dims{2}, std::vector<Dims>{Dims{1, -1, 0}}, &f3, y3.data());
  CHECK(y3[0] == std::array<uint8_t, 3>{4, 5, 6});
  CHECK(y3[1] == f3);
  CHECK(y3[2] == std::array<uint8_t, 3>{1, 2, 3});
}

TEST_CASE("reverse_sequence batch-major", "[kernels][layout]") {
  // [batch 2, time 3, inner 1]; lengths 2 and 0.
  const std::vector<int16_t> x = {1, 2, 3, 4, 5, 6};
  std::vector<int16_t> y(6);
  const int64_t lens[2] = {2, 0};
  quant::kernels::reverse_sequence(x.data(), sizeof(int16_t), 3, 2, 1, false, lens, y.data());
  CHECK(y == std::vector<int16_t>{2, 1, 3, 4, 5, 6});
}

// Trailing axes left whole are copied as one run (remap_axes, transpose):
// every element still lands where the element-by-element definition puts it,
// and a fill on an outer axis still writes the tensor's own element size.
TEST_CASE("remap_axes and transpose fold whole trailing axes into one run", "[kernels][layout]") {
  using quant::kernels::remap_axes;
  const Dims shape = {3, 4, 2, 5};
  std::vector<int16_t> x(120);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int16_t(7 * i + 1);
  const auto at = [&](int64_t a, int64_t b, int64_t c, int64_t d) { return x[size_t(((a * 4 + b) * 2 + c) * 5 + d)]; };
  // Axis 0 {2, -1, 0}, axis 1 {1, 2} (a run), axes 2 and 3 whole.
  const int16_t fill = -3;
  const std::vector<Dims> maps = {Dims{2, -1, 0}, Dims{1, 2}, Dims{0, 1}, Dims{0, 1, 2, 3, 4}};
  std::vector<int16_t> y(3 * 2 * 2 * 5, 0);
  remap_axes(x.data(), sizeof(int16_t), shape, maps, &fill, y.data());
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t d = 0; d < 5; ++d) {
          const int64_t i = maps[0][size_t(a)];
          const int16_t want = i < 0 ? fill : at(i, maps[1][size_t(b)], c, d);
          CHECK(y[size_t(((a * 2 + b) * 2 + c) * 5 + d)] == want);
        }
  // Every axis whole: a plain copy.
  std::vector<int16_t> z(120, 0);
  remap_axes(x.data(), sizeof(int16_t), shape, std::vector<Dims>{Dims{0, 1, 2}, Dims{0, 1, 2, 3}, Dims{0, 1}, Dims{0, 1, 2, 3, 4}},
             nullptr, z.data());
  CHECK(z == x);
  // ShuffleNet's channel shuffle: (0, 2, 1, 3, 4) keeps the last two axes.
  std::vector<int16_t> t(120, 0);
  transpose(x.data(), sizeof(int16_t), Dims{1, 3, 4, 2, 5}, Dims{0, 2, 1, 3, 4}, t.data());
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t d = 0; d < 5; ++d) CHECK(t[size_t(((b * 3 + a) * 2 + c) * 5 + d)] == at(a, b, c, d));
}
