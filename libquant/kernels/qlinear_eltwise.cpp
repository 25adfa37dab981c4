#include "libquant/kernels/qlinear_eltwise.h"
#include "libquant/kernels/cpu.h"

#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace quant::kernels {

template <class T>
T mlas_round_saturate(float v) {
  // cvtps2dq returns the "integer indefinite" 0x80000000 for NaN and for
  // anything that does not fit int32; packing saturates that to T's minimum.
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<T>::min();
  const float r = std::nearbyint(v);  // round half to even in the default rounding mode, as cvtps2dq
  return static_cast<T>(r < lo ? lo : (r > hi ? hi : r));
}

namespace detail {

template <class T>
void qlinear_add_portable(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ra = p.a_scale / p.c_scale;
  const float rb = p.b_scale / p.c_scale;
  // std::fma spells out the contraction of ONNX Runtime's build (see the header).
  const float b_part = rb * static_cast<float>(p.b_zero_point);
  const float base = static_cast<float>(p.c_zero_point) - std::fma(ra, static_cast<float>(p.a_zero_point), b_part);
  if (b_is_scalar) {
    const float fixed = std::fma(static_cast<float>(b[0]), rb, base);
    for (int64_t i = 0; i < n; ++i) c[i] = mlas_round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, fixed));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float partial = std::fma(static_cast<float>(b[i]), rb, base);
    c[i] = mlas_round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, partial));
  }
}

template <class T>
void qlinear_mul_portable(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ratio = p.a_scale * p.b_scale / p.c_scale;
  const float zc = static_cast<float>(p.c_zero_point);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t bv = static_cast<int32_t>(b[b_is_scalar ? 0 : i]) - p.b_zero_point;
    const int32_t product = (static_cast<int32_t>(a[i]) - p.a_zero_point) * bv;
    // Two roundings, no fma: the library is built for baseline x86-64, so the
    // compiler cannot contract this, matching qlmul.cpp's SSE2 mul then add.
    const float scaled = static_cast<float>(product) * ratio;
    c[i] = mlas_round_saturate<T>(scaled + zc);
  }
}

}  // namespace detail

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// Eight 8-bit values as float32.
template <class T>
__attribute__((target("avx2"))) inline __m256 load8_ps(const T* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(std::is_signed_v<T> ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v));
}

// MLAS's qladd_avx2.cpp instruction for instruction: VFMADD (one rounding,
// as std::fma), VCVTPS2DQ (round half to even; 0x80000000 out of range),
// then PACKSSDW and PACKUSWB / PACKSSWB, which is mlas_round_saturate.
template <class T>
__attribute__((target("avx2,fma"))) void qlinear_add_avx2(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n,
                                                          const QLinearBinaryParams& p) {
  const float ra = p.a_scale / p.c_scale;
  const float rb = p.b_scale / p.c_scale;
  const float b_part = rb * static_cast<float>(p.b_zero_point);
  const float base = static_cast<float>(p.c_zero_point) - std::fma(ra, static_cast<float>(p.a_zero_point), b_part);
  const float fixed = b_is_scalar ? std::fma(static_cast<float>(b[0]), rb, base) : 0.0f;
  const __m256 vra = _mm256_set1_ps(ra), vrb = _mm256_set1_ps(rb), vbase = _mm256_set1_ps(base);
  const __m256 vfixed = _mm256_set1_ps(fixed);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 partial = b_is_scalar ? vfixed : _mm256_fmadd_ps(load8_ps(b + i), vrb, vbase);
    const __m256i q = _mm256_cvtps_epi32(_mm256_fmadd_ps(load8_ps(a + i), vra, partial));
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = std::is_signed_v<T> ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(c + i), bytes);
  }
  if (i < n) detail::qlinear_add_portable(a + i, b_is_scalar ? b : b + i, b_is_scalar, c + i, n - i, p);
}

// Eight 8-bit values as int32.
template <class T>
__attribute__((target("avx2"))) inline __m256i load8_epi32(const T* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return std::is_signed_v<T> ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

// qlinear_mul_portable eight at a time: the product in int32 (exact: at
// most 255 * 255), to float (exact below 2^24), times the ratio, plus the
// zero point, then qlinear_add_avx2's conversion and packing. No "fma" in
// the target, so the compiler cannot fuse the multiply and the add.
template <class T>
__attribute__((target("avx2"))) void qlinear_mul_avx2(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n,
                                                      const QLinearBinaryParams& p) {
  const float ratio = p.a_scale * p.b_scale / p.c_scale;
  const __m256 vratio = _mm256_set1_ps(ratio), vzc = _mm256_set1_ps(static_cast<float>(p.c_zero_point));
  const __m256i za = _mm256_set1_epi32(p.a_zero_point), zb = _mm256_set1_epi32(p.b_zero_point);
  const __m256i fixed = _mm256_set1_epi32(b_is_scalar ? static_cast<int32_t>(b[0]) - p.b_zero_point : 0);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bv = b_is_scalar ? fixed : _mm256_sub_epi32(load8_epi32(b + i), zb);
    const __m256i product = _mm256_mullo_epi32(_mm256_sub_epi32(load8_epi32(a + i), za), bv);
    const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(product), vratio);
    const __m256i q = _mm256_cvtps_epi32(_mm256_add_ps(scaled, vzc));
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = std::is_signed_v<T> ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(c + i), bytes);
  }
  if (i < n) detail::qlinear_mul_portable(a + i, b_is_scalar ? b : b + i, b_is_scalar, c + i, n - i, p);
}

bool has_avx2_fma() {
  return cpu_supports("avx2") && cpu_supports("fma");
}

}  // namespace
#endif

template <class T>
void qlinear_add(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = has_avx2_fma();
  if (avx2) return qlinear_add_avx2(a, b, b_is_scalar, c, n, p);
#endif
  detail::qlinear_add_portable(a, b, b_is_scalar, c, n, p);
}


template <class T>
void qlinear_mul(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = cpu_supports("avx2");
  if (avx2) return qlinear_mul_avx2(a, b, b_is_scalar, c, n, p);
#endif
  detail::qlinear_mul_portable(a, b, b_is_scalar, c, n, p);
}

template uint8_t mlas_round_saturate<uint8_t>(float);
template int8_t mlas_round_saturate<int8_t>(float);
template void qlinear_add<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_add<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);
template void detail::qlinear_add_portable<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t,
                                                   const QLinearBinaryParams&);
template void detail::qlinear_add_portable<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t,
                                                  const QLinearBinaryParams&);
template void detail::qlinear_mul_portable<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t,
                                                   const QLinearBinaryParams&);
template void detail::qlinear_mul_portable<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t,
                                                  const QLinearBinaryParams&);
template void qlinear_mul<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_mul<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);

}  // namespace quant::kernels
