#include "libquant/kernels/quantize.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace quant::kernels {
namespace {

// Where the parameters for one (outer, axis) row of `inner` elements live:
// element i uses param[offset + i * step].
struct ParamRow {
  int64_t offset, step;
};

struct ParamLayout {
  int64_t outer, axis_len, inner, block_size, scale_count;

  ParamRow row(int64_t o, int64_t a) const {
    if (block_size > 0) {
      const int64_t blocks = (axis_len + block_size - 1) / block_size;
      return {(o * blocks + a / block_size) * inner, 1};
    }
    if (scale_count == 1) return {0, 0};
    return {a, 0};
  }

  void check() const {
    assert(outer >= 0 && axis_len >= 0 && inner >= 0 && block_size >= 0);
    if (block_size > 0) {
      [[maybe_unused]] const int64_t blocks = (axis_len + block_size - 1) / block_size;
      assert(scale_count == outer * blocks * inner);
    } else {
      assert(scale_count == 1 || scale_count == axis_len);
    }
  }
};

template <class Q>
Q quantize_one(float x, float scale, int32_t zero_point) {
  const float r = std::nearbyint(x / scale);
  if (std::isnan(r)) return static_cast<Q>(zero_point);
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  // Exact for every in-range result: |r + zero_point| <= 65535 < 2^24 unless
  // it saturates anyway.
  const float v = r + static_cast<float>(zero_point);
  return static_cast<Q>(v < lo ? lo : (v > hi ? hi : v));
}

#if defined(__SSE2__)
// The SSE2 body of both row quantizers below, 8-bit Q, sixteen elements at a
// time while they last; `scales(k)` and `zero_points(k)` give the four lanes'
// scales and zero points from element k. Returns the first element left for
// quantize_one. Bit for bit the scalar definition:
//  - the same IEEE division x / scale;
//  - CVTPS2DQ rounds in the current (MXCSR) rounding mode, as nearbyint
//    does; the quotient is first clamped to +-2^24, which changes no result
//    (beyond that it saturates either way) and keeps the conversion in range;
//  - r + zero_point in int32 equals the scalar's float sum (exact below 2^24);
//  - PACKSSDW then PACKUSWB (uint8) or PACKSSWB (int8) saturate to Q's range,
//    as the scalar clamp does;
//  - NaN quotients take the zero point.
template <class Q, class Scales, class ZeroPoints>
int64_t quantize_sse2(const float* x, Q* y, int64_t n, Scales scales, ZeroPoints zero_points) {
  const __m128 big = _mm_set1_ps(16777216.0f), small = _mm_set1_ps(-16777216.0f);
  auto four = [&](int64_t k) {
    const __m128i zp = zero_points(k);
    const __m128 q = _mm_div_ps(_mm_loadu_ps(x + k), scales(k));
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(q, q));
    const __m128i r = _mm_add_epi32(_mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(q, small), big)), zp);
    return _mm_or_si128(_mm_and_si128(nan, zp), _mm_andnot_si128(nan, r));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm_packs_epi32(four(i), four(i + 4));
    const __m128i hi = _mm_packs_epi32(four(i + 8), four(i + 12));
    const __m128i b = std::is_signed_v<Q> ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), b);
  }
  return i;
}
#endif

// quantize_one over y[0, n) with one scale and zero point.
template <class Q>
void quantize_row_vector(const float* x, Q* y, int64_t n, float scale, int32_t zero_point) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(Q) == 1) {
    const __m128 s = _mm_set1_ps(scale);
    const __m128i zp = _mm_set1_epi32(zero_point);
    i = quantize_sse2(x, y, n, [&](int64_t) { return s; }, [&](int64_t) { return zp; });
  }
#endif
  for (; i < n; ++i) y[i] = quantize_one<Q>(x[i], scale, zero_point);
}

// As quantize_row_vector with a scale (and zero point) per element: a row of a
// [.., N] tensor quantized per channel along its last axis (MatMul weights
// [K, N] per output column).
template <class Q>
void quantize_row_per_element(const float* x, Q* y, int64_t n, const float* scale, const Q* zero_point) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(Q) == 1) {
    i = quantize_sse2(
        x, y, n, [&](int64_t k) { return _mm_loadu_ps(scale + k); },
        [&](int64_t k) {
          return zero_point ? _mm_setr_epi32(zero_point[k], zero_point[k + 1], zero_point[k + 2], zero_point[k + 3])
                            : _mm_setzero_si128();
        });
  }
#endif
  for (; i < n; ++i) y[i] = quantize_one<Q>(x[i], scale[i], zero_point ? static_cast<int32_t>(zero_point[i]) : 0);
}

// (x - zero_point) * scale over x[0, n) with one scale and zero point:
// dequantize_linear's element formula, static_cast<float>(int64(x) - zp) *
// scale. The 8-bit body widens sixteen elements at a time to int32 (SSE2),
// subtracts, converts (CVTDQ2PS is exact below 2^24: |x - zp| <= 510 here)
// and multiplies once: the same bits.
template <class Q>
void dequantize_row(const Q* x, float* y, int64_t n, float scale, int64_t zero_point) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(Q) == 1) {
    const __m128 s = _mm_set1_ps(scale);
    const __m128i zp = _mm_set1_epi32(static_cast<int32_t>(zero_point));
    // int16 lanes to int32, sign-extended (8-bit values fit either way).
    const auto low = [](__m128i v) { return _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16); };
    const auto high = [](__m128i v) { return _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16); };
    for (; i + 16 <= n; i += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
      __m128i lo, hi;
      if constexpr (std::is_signed_v<Q>) {
        lo = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
        hi = _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8);
      } else {
        lo = _mm_unpacklo_epi8(b, _mm_setzero_si128());
        hi = _mm_unpackhi_epi8(b, _mm_setzero_si128());
      }
      const __m128i q[4] = {low(lo), high(lo), low(hi), high(hi)};
      for (int j = 0; j < 4; ++j)
        _mm_storeu_ps(y + i + 4 * j, _mm_mul_ps(_mm_cvtepi32_ps(_mm_sub_epi32(q[j], zp)), s));
    }
  }
#endif
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<int64_t>(x[i]) - zero_point) * scale;
}

}  // namespace

template <class Q>
void quantize_linear(const float* x, Q* y, int64_t outer, int64_t axis_len, int64_t inner, const float* scale,
                     const Q* zero_point, int64_t block_size, int64_t scale_count) {
  static_assert(sizeof(Q) <= 2, "QuantizeLinear is defined here for 8- and 16-bit outputs");
  const ParamLayout layout{outer, axis_len, inner, block_size, scale_count};
  layout.check();
  if (block_size == 0 && scale_count == 1) {  // per tensor: one row
    quantize_row_vector(x, y, outer * axis_len * inner, scale[0], zero_point ? static_cast<int32_t>(zero_point[0]) : 0);
    return;
  }
  if (block_size == 0 && inner == 1 && scale_count == axis_len) {  // per channel along the last axis
    for (int64_t o = 0; o < outer; ++o)
      quantize_row_per_element(x + o * axis_len, y + o * axis_len, axis_len, scale, zero_point);
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < axis_len; ++a) {
      const ParamRow p = layout.row(o, a);
      const int64_t base = (o * axis_len + a) * inner;
      if (p.step == 0) {  // one scale for the row
        quantize_row_vector(x + base, y + base, inner, scale[p.offset],
                            zero_point ? static_cast<int32_t>(zero_point[p.offset]) : 0);
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = p.offset + i * p.step;
        const int32_t zp = zero_point ? static_cast<int32_t>(zero_point[k]) : 0;
        y[base + i] = quantize_one<Q>(x[base + i], scale[k], zp);
      }
    }
  }
}

template <class Q>
void dequantize_linear(const Q* x, float* y, int64_t outer, int64_t axis_len, int64_t inner, const float* scale,
                       const Q* zero_point, int64_t block_size, int64_t scale_count) {
  const ParamLayout layout{outer, axis_len, inner, block_size, scale_count};
  layout.check();
  const auto zp_at = [&](int64_t k) { return zero_point ? static_cast<int64_t>(zero_point[k]) : int64_t{0}; };
  if (block_size == 0 && scale_count == 1) {  // per tensor: one row
    dequantize_row(x, y, outer * axis_len * inner, scale[0], zp_at(0));
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < axis_len; ++a) {
      const ParamRow p = layout.row(o, a);
      const int64_t base = (o * axis_len + a) * inner;
      if (p.step == 0) {  // one scale for the row (per channel on an outer axis)
        dequantize_row(x + base, y + base, inner, scale[p.offset], zp_at(p.offset));
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = p.offset + i * p.step;
        y[base + i] = static_cast<float>(static_cast<int64_t>(x[base + i]) - zp_at(k)) * scale[k];
      }
    }
  }
}

template void quantize_linear<uint8_t>(const float*, uint8_t*, int64_t, int64_t, int64_t, const float*, const uint8_t*,
                                       int64_t, int64_t);
template void quantize_linear<int8_t>(const float*, int8_t*, int64_t, int64_t, int64_t, const float*, const int8_t*,
                                      int64_t, int64_t);
template void quantize_linear<uint16_t>(const float*, uint16_t*, int64_t, int64_t, int64_t, const float*,
                                        const uint16_t*, int64_t, int64_t);
template void quantize_linear<int16_t>(const float*, int16_t*, int64_t, int64_t, int64_t, const float*, const int16_t*,
                                       int64_t, int64_t);
template void dequantize_linear<uint8_t>(const uint8_t*, float*, int64_t, int64_t, int64_t, const float*,
                                         const uint8_t*, int64_t, int64_t);
template void dequantize_linear<int8_t>(const int8_t*, float*, int64_t, int64_t, int64_t, const float*, const int8_t*,
                                        int64_t, int64_t);
template void dequantize_linear<uint16_t>(const uint16_t*, float*, int64_t, int64_t, int64_t, const float*,
                                          const uint16_t*, int64_t, int64_t);
template void dequantize_linear<int16_t>(const int16_t*, float*, int64_t, int64_t, int64_t, const float*,
                                         const int16_t*, int64_t, int64_t);
template void dequantize_linear<int32_t>(const int32_t*, float*, int64_t, int64_t, int64_t, const float*,
                                         const int32_t*, int64_t, int64_t);

}  // namespace quant::kernels
