// Float Sigmoid (sigmoid_f32.h): ONNX Runtime's arithmetic on x86-64 with
// FMA (MLAS, onnxruntime/core/mlas/lib/x86_64/LogisticKernelFma3.S, which
// ONNX Runtime 1.20 runs for Sigmoid-13 on AVX2 and AVX-512 hosts alike;
// constants from logistic.cpp, Eigen's):
//   v = min(18, max(-18, x)); v2 = v * v
//   p = v * (((a9 v2 + a7) v2 + a5) v2 + a3) v2 + a1)    (Horner, each step one FMA)
//   q = ((((b10 v2 + b8) v2 + b6) v2 + b4) v2 + b2) v2 + b0
//   y = max(0, p / q + 0.5)
// The clamps are MAXPS/MINPS with x second, so NaN passes through them and
// comes out NaN. Each path computes those operations in that order, so the
// bits are the same on every path and ONNX Runtime's.
#include "libquant/kernels/sigmoid_f32.h"

#include <cmath>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_SIGMOID_X86 1
#endif

namespace quant::kernels {
namespace {

constexpr float kLower = -18.0f, kUpper = 18.0f;
// alpha_7, alpha_5, alpha_3, alpha_1 after alpha_9; beta_8 .. beta_0 after beta_10.
constexpr float kAlpha9 = 4.37031012579801e-11f;
constexpr float kAlpha[] = {1.15627324459942e-07f, 6.08574864600143e-05f, 8.51377133304701e-03f,
                            2.48287947061529e-01f};
constexpr float kBeta10 = 6.10247389755681e-13f;
constexpr float kBeta[] = {5.76102136993427e-09f, 6.29106785017040e-06f, 1.70198817374094e-03f,
                           1.16817656904453e-01f, 9.93151921023180e-01f};

float sigmoid_one(float x) {
  float v = kLower > x ? kLower : x;  // MAXPS(lower, x)
  v = kUpper < v ? kUpper : v;        // MINPS(upper, v)
  const float v2 = v * v;
  float p = kAlpha9, q = kBeta10;
#pragma GCC unroll 4
  for (float a : kAlpha) p = std::fma(v2, p, a);
#pragma GCC unroll 5
  for (float b : kBeta) q = std::fma(v2, q, b);
  const float r = (v * p) / q + 0.5f;
  return 0.0f > r ? 0.0f : r;  // MAXPS(0, r)
}

void sigmoid_portable(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoid_one(x[i]);
}

#if defined(QTOOL_SIGMOID_X86)
__attribute__((target("avx2,fma"))) void sigmoid_avx2(const float* x, float* y, int64_t n) {
  const __m256 lower = _mm256_set1_ps(kLower), upper = _mm256_set1_ps(kUpper), half = _mm256_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_min_ps(upper, _mm256_max_ps(lower, _mm256_loadu_ps(x + i)));
    const __m256 v2 = _mm256_mul_ps(v, v);
    __m256 p = _mm256_set1_ps(kAlpha9), q = _mm256_set1_ps(kBeta10);
#pragma GCC unroll 4
    for (float a : kAlpha) p = _mm256_fmadd_ps(v2, p, _mm256_set1_ps(a));
#pragma GCC unroll 5
    for (float b : kBeta) q = _mm256_fmadd_ps(v2, q, _mm256_set1_ps(b));
    const __m256 r = _mm256_add_ps(_mm256_div_ps(_mm256_mul_ps(v, p), q), half);
    _mm256_storeu_ps(y + i, _mm256_max_ps(_mm256_setzero_ps(), r));
  }
  for (; i < n; ++i) y[i] = sigmoid_one(x[i]);
}

// maskz forms with every lane set: the plain ones trip GCC 12's
// -Wuninitialized inside avx512fintrin.h.
constexpr __mmask16 kAll = 0xFFFF;

__attribute__((target("avx512f"))) void sigmoid_avx512(const float* x, float* y, int64_t n) {
  const __m512 lower = _mm512_set1_ps(kLower), upper = _mm512_set1_ps(kUpper), half = _mm512_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_maskz_min_ps(kAll, upper, _mm512_maskz_max_ps(kAll, lower, _mm512_loadu_ps(x + i)));
    const __m512 v2 = _mm512_mul_ps(v, v);
    __m512 p = _mm512_set1_ps(kAlpha9), q = _mm512_set1_ps(kBeta10);
#pragma GCC unroll 4
    for (float a : kAlpha) p = _mm512_fmadd_ps(v2, p, _mm512_set1_ps(a));
#pragma GCC unroll 5
    for (float b : kBeta) q = _mm512_fmadd_ps(v2, q, _mm512_set1_ps(b));
    const __m512 r = _mm512_add_ps(_mm512_div_ps(_mm512_mul_ps(v, p), q), half);
    _mm512_storeu_ps(y + i, _mm512_maskz_max_ps(kAll, _mm512_setzero_ps(), r));
  }
  for (; i < n; ++i) y[i] = sigmoid_one(x[i]);
}
#endif

using PathFn = void (*)(const float*, float*, int64_t);

PathFn path_fn(IsaCap level) {
  if (!float_path_runs(level)) return nullptr;
#if defined(QTOOL_SIGMOID_X86)
  if (level == IsaCap::Avx512) return sigmoid_avx512;
  if (level == IsaCap::Avx2) return sigmoid_avx2;
#endif
  return level == IsaCap::Portable ? sigmoid_portable : nullptr;
}

}  // namespace

void sigmoid_f32(const float* x, float* y, int64_t n, int threads) {
  static const PathFn fn = [] {
    for (IsaCap level : {IsaCap::Avx512, IsaCap::Avx2})
      if (PathFn f = path_fn(level)) return f;
    return path_fn(IsaCap::Portable);
  }();
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { fn(x + i0, y + i0, len); });
}

bool detail::sigmoid_f32_path(IsaCap level, const float* x, float* y, int64_t n) {
  const PathFn fn = path_fn(level);
  if (fn) fn(x, y, n);
  return fn != nullptr;
}

}  // namespace quant::kernels
