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

void mul_range(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  for (; i + 8 <= n; i += 8) {
    const __m128 p = _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    const __m128 q = _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
    _mm_storeu_ps(y + i, p);
    _mm_storeu_ps(y + i + 4, q);
  }
#endif
  for (; i < n; ++i) y[i] = a[i] * b[i];
}

// x[i] * s, or s * x[i] with scale_first.
void scale_range(const float* x, float s, float* y, int64_t n, bool scale_first) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 v = _mm_set1_ps(s);
  for (; i + 4 <= n; i += 4) {
    const __m128 xi = _mm_loadu_ps(x + i);
    _mm_storeu_ps(y + i, scale_first ? _mm_mul_ps(v, xi) : _mm_mul_ps(xi, v));
  }
#endif
  for (; i < n; ++i) y[i] = scale_first ? s * x[i] : x[i] * s;
}

}  // namespace

void clamp_f32(const float* x, float* y, int64_t n, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { clamp_range(x + i0, y + i0, len, lo, hi); });
}

void add_f32(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { add_range(a + i0, b + i0, y + i0, len, clamp, lo, hi); });
}

void mul_f32(const float* a, const float* b, float* y, int64_t n, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { mul_range(a + i0, b + i0, y + i0, len); });
}

void scale_rows_f32(const float* x, const float* s, float* y, int64_t rows, int64_t len, bool scale_first,
                    int threads) {
  // Pieces of whole rows, about kElementPiece values each.
  const int64_t per_piece = std::max<int64_t>(1, kElementPiece / std::max<int64_t>(len, 1));
  parallel_for(threads, (rows + per_piece - 1) / per_piece, [&](int64_t t) {
    for (int64_t r = t * per_piece; r < std::min(rows, (t + 1) * per_piece); ++r)
      scale_range(x + r * len, s[r], y + r * len, len, scale_first);
  });
}

}  // namespace quant::kernels
