#include "libquant/kernels/weight_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace quant::kernels {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

// torchao's get_group_qparams_symmetric: absmax / ((qmax - qmin) / 2), clamped
// to float epsilon.
float int4_scale(float absmax) { return std::max(absmax / 7.5f, std::numeric_limits<float>::epsilon()); }

// clamp(round half even (w / scale), -8, 7) + 8, NaN -> 0 + 8.
uint8_t int4_code(float w, float scale) {
  float v = std::nearbyint(w / scale);
  if (std::isnan(v)) v = 0;
  return static_cast<uint8_t>(static_cast<int>(std::clamp(v, -8.0f, 7.0f)) + 8);
}

// The scalar definition over columns [c0, c1) of W [k, n].
void int4_columns_scalar(const float* w, int64_t k, int64_t n, int64_t block_size, int64_t c0, int64_t c1,
                         uint8_t* packed, float* scales) {
  const int64_t nb = k / block_size + (k % block_size != 0), blob = block_size / 2;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t k0 = b * block_size, k1 = std::min(k, k0 + block_size);
    for (int64_t c = c0; c < c1; ++c) {
      float m = 0;
      for (int64_t r = k0; r < k1; ++r) {
        const float a = std::fabs(w[r * n + c]);
        if (a <= kFloatMax) m = std::max(m, a);
      }
      const float s = int4_scale(m);
      scales[c * nb + b] = s;
      uint8_t* out = packed + (c * nb + b) * blob;
      for (int64_t j = 0; j < blob; ++j) {
        const int64_t r = k0 + 2 * j;
        const uint8_t lo = r < k1 ? int4_code(w[r * n + c], s) : 8;
        const uint8_t hi = r + 1 < k1 ? int4_code(w[(r + 1) * n + c], s) : 8;
        out[j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

#if defined(__SSE2__)
// The 16 x 16 byte matrix rows[0..15] transposed in place: four rounds of
// interleaving row i with row i + 8 (row 2i the low halves, 2i + 1 the high).
void transpose_16x16(__m128i* rows) {
  __m128i t[16];
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm_unpacklo_epi8(rows[i], rows[i + 8]);
      t[2 * i + 1] = _mm_unpackhi_epi8(rows[i], rows[i + 8]);
    }
    for (int i = 0; i < 16; ++i) rows[i] = t[i];
  }
}

// Sixteen columns at a time, one group at a time: the group's rows are read
// in memory order (absmax, then the codes of two rows per output byte), the
// bytes of the 16 columns gathered in a [blob][16] tile, transposed 16 x 16
// and written out column by column. Bit for bit int4_columns_scalar:
//  - |w| by clearing the sign bit; `a <= FLT_MAX` is false for NaN and Inf;
//    MAXPS of non-negative, non-NaN values is max;
//  - the same IEEE divisions w / scale and absmax / 7.5; MAXPS(q, eps)
//    is std::max(q, eps) for a non-NaN q;
//  - the quotient clamped to [-8, 7] before rounding equals rounding then
//    clamping (both bounds are integers); CVTPS2DQ rounds in the current
//    (MXCSR) rounding mode as nearbyint does; NaN quotients give code 0.
// Returns the first column left for the scalar loop.
int64_t int4_columns_sse2(const float* w, int64_t k, int64_t n, int64_t block_size, uint8_t* packed, float* scales) {
  constexpr int64_t kTile = 16;
  const int64_t nb = k / block_size + (k % block_size != 0), blob = block_size / 2;
  const int64_t c_end = n - n % kTile;
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)), fmax = _mm_set1_ps(kFloatMax);
  const __m128 divisor = _mm_set1_ps(7.5f), eps = _mm_set1_ps(std::numeric_limits<float>::epsilon());
  const __m128 lo8 = _mm_set1_ps(-8.0f), hi7 = _mm_set1_ps(7.0f);
  const __m128i eight = _mm_set1_epi32(8);
  const int64_t tile_rows = std::max<int64_t>(blob, kTile);  // blob <= 128 (block_size <= 256)
  alignas(16) __m128i tile[128];
  alignas(16) float s[kTile];
  auto absmax = [&](const float* x, __m128 m) {
    const __m128 a = _mm_and_ps(_mm_loadu_ps(x), abs_mask);
    return _mm_max_ps(m, _mm_and_ps(a, _mm_cmple_ps(a, fmax)));
  };
  auto codes = [&](const float* x, __m128 sv) {
    const __m128 q = _mm_div_ps(_mm_loadu_ps(x), sv);
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(q, q));
    const __m128i r = _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(q, lo8), hi7));
    return _mm_add_epi32(_mm_andnot_si128(nan, r), eight);
  };
  for (int64_t j = blob; j < tile_rows; ++j) tile[j] = _mm_setzero_si128();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t k0 = b * block_size, k1 = std::min(k, k0 + block_size);
    for (int64_t c0 = 0; c0 < c_end; c0 += kTile) {
      __m128 m0 = _mm_setzero_ps(), m1 = m0, m2 = m0, m3 = m0;
      for (int64_t r = k0; r < k1; ++r) {
        const float* x = w + r * n + c0;
        m0 = absmax(x, m0);
        m1 = absmax(x + 4, m1);
        m2 = absmax(x + 8, m2);
        m3 = absmax(x + 12, m3);
      }
      const __m128 s0 = _mm_max_ps(_mm_div_ps(m0, divisor), eps), s1 = _mm_max_ps(_mm_div_ps(m1, divisor), eps);
      const __m128 s2 = _mm_max_ps(_mm_div_ps(m2, divisor), eps), s3 = _mm_max_ps(_mm_div_ps(m3, divisor), eps);
      _mm_store_ps(s, s0);
      _mm_store_ps(s + 4, s1);
      _mm_store_ps(s + 8, s2);
      _mm_store_ps(s + 12, s3);
      for (int64_t j = 0; j < blob; ++j) {
        const int64_t r = k0 + 2 * j;
        const float* x = w + r * n + c0;
        __m128i b0 = eight, b1 = eight, b2 = eight, b3 = eight;
        if (r < k1) b0 = codes(x, s0), b1 = codes(x + 4, s1), b2 = codes(x + 8, s2), b3 = codes(x + 12, s3);
        if (r + 1 < k1) {
          b0 = _mm_or_si128(b0, _mm_slli_epi32(codes(x + n, s0), 4));
          b1 = _mm_or_si128(b1, _mm_slli_epi32(codes(x + n + 4, s1), 4));
          b2 = _mm_or_si128(b2, _mm_slli_epi32(codes(x + n + 8, s2), 4));
          b3 = _mm_or_si128(b3, _mm_slli_epi32(codes(x + n + 12, s3), 4));
        } else {
          b0 = _mm_or_si128(b0, _mm_slli_epi32(eight, 4));
          b1 = _mm_or_si128(b1, _mm_slli_epi32(eight, 4));
          b2 = _mm_or_si128(b2, _mm_slli_epi32(eight, 4));
          b3 = _mm_or_si128(b3, _mm_slli_epi32(eight, 4));
        }
        tile[j] = _mm_packus_epi16(_mm_packs_epi32(b0, b1), _mm_packs_epi32(b2, b3));
      }
      for (int64_t c = 0; c < kTile; ++c) scales[(c0 + c) * nb + b] = s[c];
      // tile[j] holds byte j of the 16 columns; transposed, row c holds
      // column c0 + c's bytes j0..j0 + 15.
      for (int64_t j0 = 0; j0 < blob; j0 += kTile) {
        transpose_16x16(tile + j0);
        for (int64_t c = 0; c < kTile; ++c) {
          uint8_t* out = packed + ((c0 + c) * nb + b) * blob + j0;
          if (blob - j0 >= kTile) _mm_storeu_si128(reinterpret_cast<__m128i*>(out), tile[j0 + c]);
          else _mm_storel_epi64(reinterpret_cast<__m128i*>(out), tile[j0 + c]);  // blob 8 (block_size 16)
        }
      }
    }
  }
  return c_end;
}
#endif

}  // namespace

void absmax_update_scalar(const float* row, float* m, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    const float a = std::fabs(row[c]);
    m[c] = a <= kFloatMax && a > m[c] ? a : m[c];
  }
}

void absmax_update(const float* row, float* m, int64_t n) {
  int64_t c = 0;
#if defined(__SSE2__)
  // As the scalar loop: the masked |x| is 0 for NaN and Inf, and MAXPS of
  // non-negative, non-NaN values is max.
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)), fmax = _mm_set1_ps(kFloatMax);
  for (; c + 8 <= n; c += 8)
    for (int64_t v = c; v < c + 8; v += 4) {
      const __m128 a = _mm_and_ps(_mm_loadu_ps(row + v), abs_mask);
      _mm_storeu_ps(m + v, _mm_max_ps(_mm_loadu_ps(m + v), _mm_and_ps(a, _mm_cmple_ps(a, fmax))));
    }
#endif
  absmax_update_scalar(row + c, m + c, n - c);
}

void quantize_int4_blocks_kn_scalar(const float* w, int64_t k, int64_t n, int64_t block_size, uint8_t* packed,
                                    float* scales) {
  int4_columns_scalar(w, k, n, block_size, 0, n, packed, scales);
}

void quantize_int4_blocks_kn(const float* w, int64_t k, int64_t n, int64_t block_size, uint8_t* packed,
                             float* scales) {
  int64_t c = 0;
#if defined(__SSE2__)
  if (block_size <= 256) c = int4_columns_sse2(w, k, n, block_size, packed, scales);
#endif
  int4_columns_scalar(w, k, n, block_size, c, n, packed, scales);
}

}  // namespace quant::kernels
