// AVX2 integer GEMM micro-kernel (4 x 16) and the AVX2 output stage shared by
// every x86 ISA. Compiled with target attributes, so the rest of the library
// needs no -mavx2; called only when the CPU reports avx2.
//
// Exactness: VPMADDUBSW (u8 x s8 pairs summed into a saturating int16) would
// clip 255*127 + 255*127; here both operands are widened to int16 and
// VPMADDWD sums the pairs into int32, which never saturates (|sum| <= 65280).
#include "libquant/kernels/qgemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>
#include <limits>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 4;

__attribute__((target("avx2"))) inline __m256i widen_b(const uint8_t* p, bool b_unsigned) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return b_unsigned ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// Four bytes of one A row as int16, repeated in every 64-bit lane.
__attribute__((target("avx2"))) inline __m256i broadcast_a(const uint8_t* p, bool a_unsigned) {
  int32_t word;
  std::memcpy(&word, p, 4);
  const __m128i v = _mm_cvtsi32_si128(word);
  return _mm256_broadcastq_epi64(a_unsigned ? _mm_cvtepu8_epi16(v) : _mm_cvtepi8_epi16(v));
}

// Lanes of x: [c0 k01, c0 k23, c1 k01, c1 k23 | c2.., c3..], y the same for
// columns 4-7: the eight column sums in order.
__attribute__((target("avx2"))) inline __m256i fold_pairs(__m256i x, __m256i y) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(x, y), 0xD8);
}

template <bool kAUnsigned>
__attribute__((target("avx2"))) void q8_gemm_avx2_4x16(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                        int32_t* tile) {
  for (int half = 0; half < 2; ++half) {
    __m256i acc[kMr][2];
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    const uint8_t* ap = a;
    const uint8_t* bp = b + half * 32;
    for (int64_t g = 0; g < groups; ++g) {
      const __m256i b0 = widen_b(bp, !kAUnsigned), b1 = widen_b(bp + 16, !kAUnsigned);
#pragma GCC unroll 4
      for (int r = 0; r < kMr; ++r) {
        const __m256i ar = broadcast_a(ap + r * 4, kAUnsigned);
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(ar, b0));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(ar, b1));
      }
      ap += kMr * kQKGroup;
      bp += kQNr * kQKGroup;
    }
    for (int r = 0; r < kMr; ++r)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + r * kQNr + half * 8), fold_pairs(acc[r][0], acc[r][1]));
  }
}

// Eight requantized int32 values (already in [lo, hi]) stored as bytes.
template <bool kUnsigned>
__attribute__((target("avx2"))) inline void store8(__m256i q, void* dst) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i bytes = kUnsigned ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
  _mm_storel_epi64(static_cast<__m128i*>(dst), bytes);
}

}  // namespace

__attribute__((target("avx2"))) void q_finish_avx2(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols,
                                                   int64_t i0, int64_t j0, const QOutput& o) {
  const QFinishParams fp = finish_params(o);
  const bool requant = fp.requant, per_channel = fp.per_channel;
  const int64_t full = !requant || o.vector_ok ? cols / 8 * 8 : 0;
  const Requantizer* r = o.requant;
  const __m256 lo = _mm256_set1_ps(static_cast<float>(fp.lo)), hi = _mm256_set1_ps(static_cast<float>(fp.hi));
  const __m256i zpv = _mm256_set1_epi32(fp.zero_point);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t gi = i0 + i;
    const int32_t* src = acc + i * acc_stride;
    const __m256i row_add = _mm256_set1_epi32(o.row_add ? o.row_add[gi] : 0);
    const __m256i row_zp = _mm256_set1_epi32(o.row_zp ? o.row_zp[gi] : 0);
    const __m256i row_sum = _mm256_set1_epi32(o.row_sum ? o.row_sum[gi] : 0);
    __m256 scale = _mm256_setzero_ps();
    if (requant && (o.channel_is_row || !per_channel) && o.vector_ok)
      scale = _mm256_set1_ps(r->scale[per_channel ? static_cast<size_t>(gi) : 0]);
    for (int64_t j = 0; j < full; j += 8) {
      const int64_t gj = j0 + j;
      __m256i v = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + j)), row_add);
      if (o.col_add) v = _mm256_add_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_add + gj)));
      if (o.row_zp)
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(row_zp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_sum + gj))));
      if (o.row_sum)
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(row_sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_zp + gj))));
      if (!requant) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<int32_t*>(o.y) + gi * o.ldy + gj), v);
        continue;
      }
      // requantize_one's Float mode: float(acc) * M, clamped to the output
      // range less the zero point, rounded half to even (VCVTPS2DQ under the
      // default MXCSR rounding, as std::nearbyint), plus the zero point.
      const __m256 s = (per_channel && !o.channel_is_row) ? _mm256_loadu_ps(r->scale.data() + gj) : scale;
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zpv);
      if (o.type == QOutType::U8)
        store8<true>(q, static_cast<uint8_t*>(o.y) + gi * o.ldy + gj);
      else
        store8<false>(q, static_cast<int8_t*>(o.y) + gi * o.ldy + gj);
    }
    for (int64_t j = full; j < cols; ++j) q_finish_one(static_cast<uint32_t>(src[j]), gi, j0 + j, o);
  }
}

namespace {
const QGemmIsa kAvx2{"avx2", kMr, q8_gemm_avx2_4x16<true>, q8_gemm_avx2_4x16<false>, q_finish_avx2, nullptr};
}  // namespace

const QGemmIsa* const kQGemmIsaAvx2 = &kAvx2;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvx2 = nullptr;
}  // namespace quant::kernels::detail

#endif
