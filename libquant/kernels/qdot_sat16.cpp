#include "libquant/kernels/qdot_sat16.h"

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "libquant/kernels/qconv_shape.h"
#include "libquant/kernels/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QT_SAT16_AVX2 1
#endif

namespace quant::kernels {
namespace {

constexpr int32_t kInt16Min = -32768, kInt16Max = 32767;

// The byte a MLAS u8 x s8 kernel multiplies: uint8 as it is, int8 rewritten
// to uint8 (x + 128, ONNX Runtime's QDQS8ToU8Transformer).
template <class T>
uint8_t as_u8(T v) {
  if constexpr (std::is_signed_v<T>) return static_cast<uint8_t>(static_cast<uint8_t>(v) ^ 0x80);
  else return v;
}

#ifdef QT_SAT16_AVX2
// 16 values per step: both operands widened to int16 and VPMADDWD forms the
// eight exact pair sums (lanes 2j, 2j + 1), which are then clamped to int16,
// the VPMADDUBSW result, and counted where the clamp changed them.
__attribute__((target("avx2"))) int32_t dot_avx2(const uint8_t* a, const int8_t* b, int64_t k,
                                                 SaturationStats& stats) {
  const __m256i lo = _mm256_set1_epi32(kInt16Min), hi = _mm256_set1_epi32(kInt16Max);
  __m256i acc = _mm256_setzero_si256(), kept = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256i a16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256i b16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m256i exact = _mm256_madd_epi16(a16, b16);
    const __m256i clipped = _mm256_min_epi32(_mm256_max_epi32(exact, lo), hi);
    acc = _mm256_add_epi32(acc, clipped);
    kept = _mm256_sub_epi32(kept, _mm256_cmpeq_epi32(exact, clipped));
  }
  alignas(32) int32_t lanes[8], kept_lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
  _mm256_store_si256(reinterpret_cast<__m256i*>(kept_lanes), kept);
  uint32_t sum = 0;
  int64_t unchanged = 0;
  for (int j = 0; j < 8; ++j) sum += static_cast<uint32_t>(lanes[j]), unchanged += kept_lanes[j];
  stats.pairs += i / 2;
  stats.saturated += i / 2 - unchanged;
  // i is even, so the tail keeps the global pairing.
  sum += static_cast<uint32_t>(dot_u8s8_sat16_portable(a + i, b + i, k - i, stats));
  return static_cast<int32_t>(sum);
}

bool cpu_has_avx2() {
  static const bool has = cpu_supports("avx2");
  return has;
}
#endif

}  // namespace

int32_t dot_u8s8_sat16_portable(const uint8_t* a, const int8_t* b, int64_t k, SaturationStats& stats) {
  uint32_t sum = 0;  // int32 accumulation wraps, as VPADDD does
  for (int64_t i = 0; i < k; i += 2) {
    int32_t exact = static_cast<int32_t>(a[i]) * b[i];
    if (i + 1 < k) exact += static_cast<int32_t>(a[i + 1]) * b[i + 1];
    const int32_t clipped = std::clamp(exact, kInt16Min, kInt16Max);
    stats.saturated += clipped != exact;
    sum += static_cast<uint32_t>(clipped);
  }
  stats.pairs += (k + 1) / 2;
  return static_cast<int32_t>(sum);
}

int32_t dot_u8s8_sat16(const uint8_t* a, const int8_t* b, int64_t k, SaturationStats& stats) {
#ifdef QT_SAT16_AVX2
  if (cpu_has_avx2()) return dot_avx2(a, b, k, stats);
#endif
  return dot_u8s8_sat16_portable(a, b, k, stats);
}

Sat16Weights Sat16Weights::from_matrix(const int8_t* b, int64_t ldb, BLayout layout, int64_t k, int64_t n,
                                       const int8_t* zero_points, int64_t zero_point_count) {
  Sat16Weights w;
  w.n = n, w.k = k;
  w.cols.resize(static_cast<size_t>(n * k));
  w.col_sum.assign(static_cast<size_t>(n), 0);
  w.zero_point.assign(static_cast<size_t>(n), 0);
  for (int64_t j = 0; j < n; ++j) {
    int32_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int8_t v = layout == BLayout::KxN ? b[i * ldb + j] : b[j * ldb + i];
      w.cols[static_cast<size_t>(j * k + i)] = v;
      sum += v;
    }
    w.col_sum[static_cast<size_t>(j)] = sum;
    if (zero_point_count > 0) w.zero_point[static_cast<size_t>(j)] = zero_points[zero_point_count == 1 ? 0 : j];
  }
  return w;
}

Sat16Weights Sat16Weights::from_conv(const int8_t* w, int64_t out_channels, int64_t group_in, int64_t taps,
                                     const int8_t* zero_points, int64_t zero_point_count) {
  // [M, C/group, taps] -> per output channel (column) [taps][C/group].
  const int64_t k = group_in * taps;
  std::vector<int8_t> reordered(static_cast<size_t>(out_channels * k));
  for (int64_t m = 0; m < out_channels; ++m)
    for (int64_t c = 0; c < group_in; ++c)
      for (int64_t t = 0; t < taps; ++t)
        reordered[static_cast<size_t>(m * k + t * group_in + c)] = w[(m * group_in + c) * taps + t];
  return from_matrix(reordered.data(), k, BLayout::NxK, k, out_channels, zero_points, zero_point_count);
}

template <class TA>
SaturationStats qgemm_sat16(int64_t m, const TA* a, int64_t lda, TA a_zero_point, const Sat16Weights& w,
                            int64_t first, int64_t count, int32_t* c, int64_t ldc) {
  assert(first >= 0 && first + count <= w.n);
  SaturationStats stats;
  const int64_t k = w.k;
  const uint32_t za = as_u8(a_zero_point);
  std::vector<uint8_t> row(static_cast<size_t>(k));
  for (int64_t i = 0; i < m; ++i) {
    const TA* src = a + i * lda;
    uint32_t row_sum = 0;
    for (int64_t j = 0; j < k; ++j) row[static_cast<size_t>(j)] = as_u8(src[j]), row_sum += row[static_cast<size_t>(j)];
    for (int64_t j = 0; j < count; ++j) {
      const int64_t col = first + j;
      const auto zb = static_cast<uint32_t>(w.zero_point[static_cast<size_t>(col)]);
      const auto d = static_cast<uint32_t>(dot_u8s8_sat16(row.data(), w.cols.data() + col * k, k, stats));
      // Zero points through the sums, modulo 2^32 like MLAS's int32 adds.
      const uint32_t v = d - zb * row_sum - za * static_cast<uint32_t>(w.col_sum[static_cast<size_t>(col)]) +
                         static_cast<uint32_t>(k) * za * zb;
      c[i * ldc + j] = static_cast<int32_t>(v);
    }
  }
  return stats;
}

template <class TX>
SaturationStats qconv_sat16_s32(const ConvGeometry& g, const TX* x, TX x_zero_point, const Sat16Weights& w,
                                int32_t* acc) {
  const detail::QConvShape c = detail::qconv_shape(g);
  const detail::Spatial3& s = c.s;
  assert(w.n == g.out_channels && w.k == c.reduction);
  constexpr int64_t kTile = 64;  // output pixels per qgemm_sat16 call
  const int64_t tile = std::min(kTile, std::max<int64_t>(c.out_plane, 1));
  std::vector<TX> patches(static_cast<size_t>(tile * c.reduction));
  SaturationStats stats;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const TX* xg = x + (n * g.in_channels + grp * c.group_in) * c.in_plane;
      for (int64_t p0 = 0; p0 < c.out_plane; p0 += tile) {
        const int64_t count = std::min(tile, c.out_plane - p0);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t p = p0 + i;
          const int64_t o2 = p % s.out[2], o1 = (p / s.out[2]) % s.out[1], o0 = p / (s.out[2] * s.out[1]);
          TX* row = patches.data() + i * c.reduction;
          for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0) {
            const int64_t i0 = o0 * s.strides[0] + k0 * s.dilations[0] - s.pads_begin[0];
            for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1) {
              const int64_t i1 = o1 * s.strides[1] + k1 * s.dilations[1] - s.pads_begin[1];
              for (int64_t k2 = 0; k2 < s.kernel[2]; ++k2) {
                const int64_t i2 = o2 * s.strides[2] + k2 * s.dilations[2] - s.pads_begin[2];
                const bool inside = i0 >= 0 && i0 < s.in[0] && i1 >= 0 && i1 < s.in[1] && i2 >= 0 && i2 < s.in[2];
                const int64_t offset = (i0 * s.in[1] + i1) * s.in[2] + i2;
                for (int64_t ch = 0; ch < c.group_in; ++ch)
                  *row++ = inside ? xg[ch * c.in_plane + offset] : x_zero_point;
              }
            }
          }
        }
        int32_t* out = acc + (n * c.out_plane + p0) * g.out_channels + grp * c.group_out;
        stats += qgemm_sat16<TX>(count, patches.data(), c.reduction, x_zero_point, w, grp * c.group_out, c.group_out,
                                 out, g.out_channels);
      }
    }
  }
  return stats;
}

template SaturationStats qgemm_sat16<uint8_t>(int64_t, const uint8_t*, int64_t, uint8_t, const Sat16Weights&, int64_t,
                                              int64_t, int32_t*, int64_t);
template SaturationStats qgemm_sat16<int8_t>(int64_t, const int8_t*, int64_t, int8_t, const Sat16Weights&, int64_t,
                                             int64_t, int32_t*, int64_t);
template SaturationStats qconv_sat16_s32<uint8_t>(const ConvGeometry&, const uint8_t*, uint8_t, const Sat16Weights&,
                                                  int32_t*);
template SaturationStats qconv_sat16_s32<int8_t>(const ConvGeometry&, const int8_t*, int8_t, const Sat16Weights&,
                                                 int32_t*);

}  // namespace quant::kernels
