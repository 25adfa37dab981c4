// The AVX-512 output stage of the integer convolution's fused kernels
// (QRequantTile, qgemm_ukernel.h) on one accumulator row of 16 int32 sums:
// shared by the AVX-512 VNNI kernels (qgemm_ukernel_avx512.cpp), which keep
// their sums in registers, and the AMX ones (qgemm_ukernel_amx.cpp), which
// read them back from the tiles. Inline functions with target attributes:
// only called from code compiled for AVX-512.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>

#include "libquant/kernels/qgemm_ukernel.h"

namespace quant::kernels::detail {

// GCC 12 reports the _mm512_undefined_* pass-through operands of the unmasked
// AVX-512 intrinsics as maybe-uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Sixteen int32 sums requantized as q_finish_avx2 does each one: times the
// scale, clamped to [lo, hi], rounded, plus the zero point, narrowed to bytes;
// then the `mask` lanes stored at out. Shared by the fused conv output stage
// and q_finish_avx512.
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m128i requant_bytes(
    __m512i v, __m512 scale, __m512 lo, __m512 hi, __m512i zero_point) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), scale);
  f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), zero_point));
}

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void requant_store(
    __m512i v, __m512 scale, __m512 lo, __m512 hi, __m512i zero_point, __mmask16 mask, uint8_t* out) {
  const __m128i q = requant_bytes(v, scale, lo, hi, zero_point);
  if (mask == 0xFFFF) _mm_storeu_si128(reinterpret_cast<__m128i*>(out), q);
  else _mm_mask_storeu_epi8(out, mask, q);
}

// The fused output stage of one accumulator row: 16 columns from col on
// (panel col / 16), `mask` of them stored (QRequantTile), or with t.lines
// that panel's line stores (`mask` still the valid columns).
template <bool kLines>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void requant_row(
    __m512i v, int r, int col, __mmask16 mask, const QRequantTile& t) {
  v = _mm512_add_epi32(v, _mm512_set1_epi32(t.row_add[r]));
  if (t.row_zp)
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(t.row_zp[r]), _mm512_maskz_loadu_epi32(mask, t.col_sum + col)));
  if (kLines) {
    const __m128i q = requant_bytes(v, _mm512_set1_ps(t.row_scale[r]), _mm512_set1_ps(t.lo), _mm512_set1_ps(t.hi),
                                    _mm512_set1_epi32(t.zero_point));
    const int h = col / kQNr;
    uint8_t* out = t.y + r * t.ldy + col;
    for (int s = 0; s < t.lines->count[h]; ++s)
      _mm_mask_storeu_epi8(out - t.lines->shift[h][s], t.lines->mask[h][s], q);
    return;
  }
  requant_store(v, _mm512_set1_ps(t.row_scale[r]), _mm512_set1_ps(t.lo), _mm512_set1_ps(t.hi),
                _mm512_set1_epi32(t.zero_point), mask, t.y + r * t.ldy + col);
}

#pragma GCC diagnostic pop

}  // namespace quant::kernels::detail

#endif
