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
// Sixteen columns at a time, one group at a time: the group's rows are read
// in memory order (absmax, then the codes of two rows per output byte), the
// bytes of the 16 columns gathered in a [blob][16] tile and written out
// column by column. Bit for bit int4_columns_scalar:
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
  alignas(16) uint8_t tile[128 * kTile];  // blob <= 128 (block_size <= 256)
  alignas(16) float s[kTile];
  auto codes = [&](const float* x, const __m128* sv, int v) {
    const __m128 q = _mm_div_ps(_mm_loadu_ps(x + 4 * v), sv[v]);
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(q, q));
    const __m128i r = _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(q, lo8), hi7));
    return _mm_add_epi32(_mm_andnot_si128(nan, r), eight);
  };
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t k0 = b * block_size, k1 = std::min(k, k0 + block_size);
    for (int64_t c0 = 0; c0 < c_end; c0 += kTile) {
      __m128 m[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
      for (int64_t r = k0; r < k1; ++r)
        for (int v = 0; v < 4; ++v) {
          const __m128 a = _mm_and_ps(_mm_loadu_ps(w + r * n + c0 + 4 * v), abs_mask);
          m[v] = _mm_max_ps(m[v], _mm_and_ps(a, _mm_cmple_ps(a, fmax)));
        }
      __m128 sv[4];
      for (int v = 0; v < 4; ++v) {
        sv[v] = _mm_max_ps(_mm_div_ps(m[v], divisor), eps);
        _mm_store_ps(s + 4 * v, sv[v]);
      }
      for (int64_t j = 0; j < blob; ++j) {
        const int64_t r = k0 + 2 * j;
        __m128i byte[4];
        for (int v = 0; v < 4; ++v) {
          const __m128i lo = r < k1 ? codes(w + r * n + c0, sv, v) : eight;
          const __m128i hi = r + 1 < k1 ? codes(w + (r + 1) * n + c0, sv, v) : eight;
          byte[v] = _mm_or_si128(lo, _mm_slli_epi32(hi, 4));
        }
        const __m128i b16 = _mm_packus_epi16(_mm_packs_epi32(byte[0], byte[1]), _mm_packs_epi32(byte[2], byte[3]));
        _mm_store_si128(reinterpret_cast<__m128i*>(tile + j * kTile), b16);
      }
      for (int64_t c = 0; c < kTile; ++c) {
        scales[(c0 + c) * nb + b] = s[c];
        uint8_t* out = packed + ((c0 + c) * nb + b) * blob;
        for (int64_t j = 0; j < blob; ++j) out[j] = tile[j * kTile + c];
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
