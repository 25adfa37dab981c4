#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/calib/weight_rounding.h"
#include "libquant/kernels/int4_matmul.h"
#include "libquant/kernels/weight_quant.h"

using namespace quant::kernels;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// W [k, n]: random values, then in places the cases the vector paths must
// keep: NaN, +-Inf, huge values, -0, denormals, a column group of zeros (the
// epsilon scale), and ties: a group whose absmax is 7.5 (scale 1) holding
// the halves -7.5..7.5.
std::vector<float> weights(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(k * n));
  for (float& v : w) v = normal(rng);
  const float specials[] = {kNaN, kInf, -kInf, 3e38f, -3e38f, -0.0f, 1e-40f, -1e-39f};
  std::uniform_int_distribution<size_t> at(0, w.size() - 1);
  for (int rep = 0; rep < 3; ++rep)
    for (float s : specials) w[at(rng)] = s;
  const int64_t tie_col = n / 2;
  for (int64_t r = 0; r < std::min<int64_t>(k, 16); ++r) w[static_cast<size_t>(r * n + tie_col)] = -7.5f + static_cast<float>(r);
  w[static_cast<size_t>(tie_col)] = 7.5f;
  if (n > 1)
    for (int64_t r = 0; r < k; ++r) w[static_cast<size_t>(r * n + n - 1)] = 0.0f;
  return w;
}

// The definition: round_to_nearest of W^T (calib), then pack_int4_blocks.
void reference(const std::vector<float>& w, int64_t k, int64_t n, int64_t g, std::vector<uint8_t>& packed,
               std::vector<float>& scales) {
  std::vector<float> wt(w.size());
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) wt[static_cast<size_t>(c * k + r)] = w[static_cast<size_t>(r * n + c)];
  const quant::calib::RoundedWeights rw = quant::calib::round_to_nearest(wt.data(), n, k, g, quant::calib::kInt4Torchao);
  scales = rw.scale;
  packed.assign(static_cast<size_t>(n * rw.groups_per_row() * g / 2), 0);
  pack_int4_blocks(rw.q.data(), n, k, g, packed.data());
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("quantize_int4_blocks_kn equals round_to_nearest of W^T then pack_int4_blocks", "[kernels][int4]") {
  uint32_t seed = 1;
  for (int64_t g : {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{256}})
    for (int64_t k : {g, 3 * g, int64_t{70}, int64_t{33}})
      for (int64_t n : {int64_t{1}, int64_t{9}, int64_t{16}, int64_t{37}, int64_t{48}}) {
        CAPTURE(g, k, n);
        const std::vector<float> w = weights(k, n, seed++);
        std::vector<uint8_t> want_packed;
        std::vector<float> want_scales;
        reference(w, k, n, g, want_packed, want_scales);
        for (bool vector : {true, false}) {
          CAPTURE(vector);
          std::vector<uint8_t> packed(want_packed.size(), 0xee);
          std::vector<float> scales(want_scales.size(), -1.0f);
          (vector ? quantize_int4_blocks_kn : quantize_int4_blocks_kn_scalar)(w.data(), k, n, g, packed.data(),
                                                                              scales.data());
          CHECK(packed == want_packed);
          CHECK(same_bits(scales, want_scales));
        }
      }
}

TEST_CASE("quantize_int4_blocks_kn rounds ties to even and maps NaN to 0 and Inf to the ends", "[kernels][int4]") {
  // One group of 16 along K, 16 columns (the vector tile): column 0 holds
  // the halves, absmax 7.5 so the scale is 1.
  const int64_t k = 16, n = 16, g = 16;
  std::vector<float> w(static_cast<size_t>(k * n), 0.0f);
  const float col0[16] = {7.5f, -7.5f, 6.5f, -6.5f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, kNaN, kInf, -kInf, 0, 0, 0};
  for (int64_t r = 0; r < k; ++r) w[static_cast<size_t>(r * n)] = col0[r];
  std::vector<uint8_t> packed(static_cast<size_t>(n * g / 2));
  std::vector<float> scales(static_cast<size_t>(n));
  quantize_int4_blocks_kn(w.data(), k, n, g, packed.data(), scales.data());
  CHECK(scales[0] == 1.0f);
  CHECK(scales[1] == std::numeric_limits<float>::epsilon());  // an all-zero group
  // values 7.5->7 (8 clamps), -7.5->-8, 6.5->6, -6.5->-6, 0.5->0, -0.5->0, 1.5->2, -1.5->-2, 2.5->2, -2.5->-2,
  // NaN->0, Inf->7, -Inf->-8; stored + 8, low nibble first.
  const int codes[16] = {7, -8, 6, -6, 0, 0, 2, -2, 2, -2, 0, 7, -8, 0, 0, 0};
  for (int j = 0; j < 8; ++j) {
    CAPTURE(j);
    CHECK(packed[static_cast<size_t>(j)] == ((codes[2 * j] + 8) | ((codes[2 * j + 1] + 8) << 4)));
  }
}

TEST_CASE("absmax_update equals its scalar definition, skipping NaN and Inf", "[kernels][quantize]") {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{19}, int64_t{64}, int64_t{131}}) {
    CAPTURE(n);
    const std::vector<float> w = weights(5, n, static_cast<uint32_t>(100 + n));
    std::vector<float> m(static_cast<size_t>(n), 0.0f), want = m;
    for (int64_t r = 0; r < 5; ++r) {
      absmax_update(w.data() + r * n, m.data(), n);
      absmax_update_scalar(w.data() + r * n, want.data(), n);
    }
    CHECK(same_bits(m, want));
    for (float v : m) CHECK(std::isfinite(v));
  }
  std::vector<float> row = {kNaN, kInf, -kInf, -2.0f, 1.0f, -0.0f, 3e38f, kNaN, 0.5f};
  std::vector<float> m(row.size(), 0.0f);
  absmax_update(row.data(), m.data(), static_cast<int64_t>(row.size()));
  CHECK(m == std::vector<float>{0, 0, 0, 2.0f, 1.0f, 0, 3e38f, 0, 0.5f});
}
