// The im2col panel packers: the generic one against the im2col matrix written
// out naively, and the vector packer against the generic one byte for byte
// (skipped where the CPU lacks it: kVector would be kGeneric), over
// geometries, depth blocks, column windows and panel widths.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "libquant/kernels/im2col.h"
#include "tests/skip.h"

using namespace quant::kernels;

namespace {

struct Geometry {
  int64_t c;
  detail::Spatial3 s;
};

// A 2-D geometry (depth 1) with output sizes from the ONNX Conv formula.
detail::Spatial3 geometry(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                          int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t d = 1, int64_t kd = 1) {
  detail::Spatial3 s{};
  const int64_t in[3] = {d, h, w}, k[3] = {kd, kh, kw}, st[3] = {1, sh, sw}, dl[3] = {1, dh, dw};
  const int64_t p0[3] = {0, pt, pl}, p1[3] = {0, pb, pr};
  for (int i = 0; i < 3; ++i) {
    s.in[i] = in[i];
    s.kernel[i] = k[i];
    s.strides[i] = st[i];
    s.dilations[i] = dl[i];
    s.pads_begin[i] = p0[i];
    s.pads_end[i] = p1[i];
    s.out[i] = (in[i] + p0[i] + p1[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  return s;
}

// Element (k, j) of the im2col matrix, from the definition.
float element(const detail::Spatial3& s, const std::vector<float>& x, int64_t k, int64_t j) {
  const int64_t kv = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int64_t c = k / kv, t = k % kv;
  const int64_t tap[3] = {t / (s.kernel[1] * s.kernel[2]), (t / s.kernel[2]) % s.kernel[1], t % s.kernel[2]};
  const int64_t o[3] = {j / (s.out[1] * s.out[2]), (j / s.out[2]) % s.out[1], j % s.out[2]};
  int64_t idx = c;
  for (int i = 0; i < 3; ++i) {
    const int64_t in = o[i] * s.strides[i] + tap[i] * s.dilations[i] - s.pads_begin[i];
    if (in < 0 || in >= s.in[i]) return 0.0f;
    idx = idx * s.in[i] + in;
  }
  return x[size_t(idx)];
}

}  // namespace

namespace {

// Packs every case with `packer` and checks the panels: against the
// definition, or (compare_to_generic) byte for byte against the generic packer.
void check_packer(Im2colSource::Packer packer, bool compare_to_generic) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<Geometry> cases = {
      {3, geometry(12, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)},
      {4, geometry(56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)},   // resnet layer1
      {5, geometry(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)},     // narrow rows: several per vector
      {3, geometry(30, 31, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3)},   // resnet stem, small
      {4, geometry(15, 75, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)},   // stride 2, rows longer than a panel
      {6, geometry(14, 14, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0)},   // 1x1 stride 2 (downsample)
      {2, geometry(9, 20, 3, 5, 1, 1, 2, 3, 2, 4, 1, 5)},    // dilation, uneven pads, taps wholly in padding
      {2, geometry(3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3)},     // windows entirely in padding
      {2, geometry(10, 1, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0)},    // width 1: a row per lane
      {3, geometry(8, 9, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1)},     // stride 3: generic packer only
      {3, geometry(9, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)},     // stride 2, 2 outputs per row: 4+ rows per 8 lanes
      {2, geometry(13, 19, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0)},   // stride 2, no padding: runs end at the row's last element
      {2, geometry(5, 6, 2, 3, 1, 2, 1, 1, 1, 1, 0, 1, 4, 2)},  // 3-D
  };
  for (const Geometry& gc : cases) {
    const detail::Spatial3& s = gc.s;
    std::vector<float> x(size_t(gc.c * s.in[0] * s.in[1] * s.in[2]));
    for (float& v : x) v = dist(rng);
    const int64_t K = gc.c * s.kernel[0] * s.kernel[1] * s.kernel[2], N = s.out[0] * s.out[1] * s.out[2];
    const Im2colSource generic(s, x.data(), Im2colSource::Packer::kGeneric);
    const Im2colSource tested(s, x.data(), packer);
    for (int nr : {8, 16, 32, 48}) {
      // Column windows that start mid-row and end short of a panel, and
      // depth blocks that start mid-channel; the depth blocks of one window
      // in a row, as the GEMM packs them (the vector packer keeps a window's
      // reads from one block to the next).
      for (const auto& [j0, nc] : std::vector<std::pair<int64_t, int64_t>>{{0, N}, {N / 3, N - N / 3}, {1, N / 2}}) {
        for (const auto& [k0, kc] : std::vector<std::pair<int64_t, int64_t>>{{0, K}, {1, K - 1}, {K / 2, K - K / 2}}) {
          if (kc <= 0 || nc <= 0) continue;
          const int64_t n_panels = (nc + nr - 1) / nr;
          const size_t size = size_t(n_panels * kc * nr);
          std::vector<float> a(size, 99.0f), b(size, -99.0f);
          tested.pack(k0, kc, j0, nc, nr, a.data());
          if (compare_to_generic) generic.pack(k0, kc, j0, nc, nr, b.data());
          INFO("C=" << gc.c << " in=" << s.in[1] << "x" << s.in[2] << " k=" << s.kernel[1] << "x" << s.kernel[2]
                    << " s=" << s.strides[2] << " nr=" << nr << " k0=" << k0 << " kc=" << kc << " j0=" << j0
                    << " nc=" << nc);
          size_t bad = 0;
          for (int64_t q = 0; q < n_panels; ++q)
            for (int64_t kk = 0; kk < kc; ++kk)
              for (int l = 0; l < nr; ++l) {
                const int64_t j = j0 + q * nr + l;
                const float want = j < j0 + nc ? element(s, x, k0 + kk, j) : 0.0f;
                if (a[size_t((q * kc + kk) * nr + l)] != want) ++bad;
              }
          CHECK(bad == 0);
          if (compare_to_generic) CHECK(a == b);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("im2col generic packer writes the im2col matrix's panels", "[kernels][conv]") {
  check_packer(Im2colSource::Packer::kGeneric, false);
}

TEST_CASE("im2col vector packer writes the generic packer's bytes", "[kernels][conv]") {
  if (!Im2colSource::vector_available()) QTOOL_SKIP("no AVX2 or AVX-512F + BMI2 on this CPU: kVector would be kGeneric");
  check_packer(Im2colSource::Packer::kVector, true);
}

TEST_CASE("im2col AVX2 vector packer writes the generic packer's bytes", "[kernels][conv]") {
  // On an AVX-512 host too, where kVector is the AVX-512 packer.
  if (!Im2colSource::vector_avx2_available()) QTOOL_SKIP("no AVX2 on this CPU: kVectorAvx2 would be kGeneric");
  check_packer(Im2colSource::Packer::kVectorAvx2, true);
}

TEST_CASE("im2col vector packer keeps no reads of one geometry for another", "[kernels][conv]") {
  // Two geometries with the same output size, packed alternately on one
  // thread with the same column window and panel width: each must get its
  // own reads (the vector packer's per-thread cache of a window's runs is
  // keyed by the geometry too).
  if (!Im2colSource::vector_available()) QTOOL_SKIP("no AVX2 or AVX-512F + BMI2 on this CPU: kVector would be kGeneric");
  const detail::Spatial3 same_pads = geometry(20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
  const detail::Spatial3 shifted = geometry(20, 20, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2);
  REQUIRE(same_pads.out[1] == shifted.out[1]);
  REQUIRE(same_pads.out[2] == shifted.out[2]);
  const int64_t c = 40, K = c * 9, N = same_pads.out[1] * same_pads.out[2], nr = 16, j0 = 16, nc = 128;
  std::vector<float> x(size_t(c * 20 * 20));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) - 48.0f;
  for (Im2colSource::Packer packer : {Im2colSource::Packer::kVector, Im2colSource::Packer::kVectorAvx2}) {
    for (int64_t k0 = 0; k0 < K; k0 += 128) {
      for (const detail::Spatial3* s : {&same_pads, &shifted}) {
        const int64_t kc = std::min<int64_t>(128, K - k0);
        std::vector<float> got(size_t(nc / nr * kc * nr));
        Im2colSource(*s, x.data(), packer).pack(k0, kc, j0, nc, nr, got.data());
        size_t bad = 0;
        for (int64_t q = 0; q < nc / nr; ++q)
          for (int64_t kk = 0; kk < kc; ++kk)
            for (int64_t l = 0; l < nr; ++l)
              if (got[size_t((q * kc + kk) * nr + l)] != element(*s, x, k0 + kk, j0 + q * nr + l)) ++bad;
        INFO("k0=" << k0 << " pads " << s->pads_begin[1] << "," << s->pads_begin[2] << " N=" << N);
        CHECK(bad == 0);
      }
    }
  }
}
