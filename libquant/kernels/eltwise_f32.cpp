#include "libquant/kernels/eltwise_f32.h"

#include <algorithm>

#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace quant::kernels {
namespace {

// The reference clamp order (see clip in unary.cpp). _mm_max_ps(lo, v) is
// lo > v ? lo : v and _mm_min_ps(hi, v) is hi < v ? hi : v: the same
// selections, and NaN v comes out as v in both.
inline float clamp_one(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

void clamp_range(const float* x, float* y, int64_t n, float lo, float hi) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  for (; i + 8 <= n; i += 8) {
    const __m128 a = _mm_min_ps(vhi, _mm_max_ps(vlo, _mm_loadu_ps(x + i)));
    const __m128 b = _mm_min_ps(vhi, _mm_max_ps(vlo, _mm_loadu_ps(x + i + 4)));
    _mm_storeu_ps(y + i, a);
    _mm_storeu_ps(y + i + 4, b);
  }
#endif
  for (; i < n; ++i) y[i] = clamp_one(x[i], lo, hi);
}

void add_range(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  for (; i + 4 <= n; i += 4) {
    __m128 s = _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    if (clamp) s = _mm_min_ps(vhi, _mm_max_ps(vlo, s));
    _mm_storeu_ps(y + i, s);
  }
#endif
  for (; i < n; ++i) y[i] = clamp ? clamp_one(a[i] + b[i], lo, hi) : a[i] + b[i];
}

}  // namespace

void clamp_f32(const float* x, float* y, int64_t n, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { clamp_range(x + i0, y + i0, len, lo, hi); });
}

void add_f32(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { add_range(a + i0, b + i0, y + i0, len, clamp, lo, hi); });
}

}  // namespace quant::kernels
