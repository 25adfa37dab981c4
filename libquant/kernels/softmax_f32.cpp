// Float Softmax and LogSoftmax (softmax.h) on vectors: ONNX Runtime's
// arithmetic (MLAS, onnxruntime/core/mlas/lib/compute.cpp,
// MlasComputeSoftmaxThreaded, 1.20) with one order of the sums for every ISA.
//
// Per row of d values, as MLAS computes it:
//   max   over the row (exact in any order; a NaN in the row makes every
//         output NaN whatever the max does with it, through its own exp);
//   e_i = exp_term(x_i + (-max)): MLAS's MlasComputeSumExpVector, below;
//   Softmax    y_i = e_i * (1 / sum e)      (MlasComputeSoftmaxOutputF32Kernel)
//   LogSoftmax y_i = (x_i + (-max)) - log(sum e)   (...LogSoftmaxOutputF32Kernel)
// The sum: 16 partial sums, lane l adding e_i for i = l (mod 16) in order,
// then lanes l and l + 8 added, l and l + 4, l and l + 2, l and l + 1. MLAS's
// own order follows its vector width (4, 8 or 16 lanes by ISA), so ONNX
// Runtime's sums differ in their last bits from one CPU to another; this one
// is the same on the portable, AVX2 and AVX-512 paths (tests compare them
// bit for bit). exp_term is MLAS's generic and FMA3 formula: a value below
// -88.38 after the shift counts as -88.38, and a term under 2^-126 comes out
// as 0 (ONNX Runtime's AVX-512 kernel keeps subnormal terms down to about
// exp(-104); they are below 1e-37 of the row's largest term).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/softmax.h"
#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_SOFTMAX_X86 1
#endif

namespace quant::kernels {
namespace {

constexpr int kLanes = 16;

// MlasExpConstants (compute.cpp): the range of the sum's terms, the rounding
// bias 1.5 * 2^23 that rounds to an integer, log2(e), ln(2) in two parts
// and the polynomial's coefficients, highest first.
constexpr float kLowerRange = -88.3762626647949f;
constexpr float kRoundingBias = 12582912.0f;
constexpr float kLog2Reciprocal = 1.44269504088896341f;
constexpr float kLog2High = -6.93145752e-1f;
constexpr float kLog2Low = -1.42860677e-6f;
constexpr float kPoly0 = 0x1.694000p-10f;
// poly_1 .. poly_4, then poly_56 twice (MLAS's last two steps).
constexpr float kPoly[] = {0x1.125edcp-7f, 0x1.555b5ap-5f, 0x1.555450p-3f, 0x1.fffff6p-2f, 1.0f, 1.0f};
constexpr uint32_t kMaximumExponent = 0x3F800000u;

// One term, the vector kernels' operations in their order (std::fma is one
// rounding, as VFMADD is).
float exp_term(float x, float neg_max) {
  float v = x + neg_max;
  v = kLowerRange > v ? kLowerRange : v;  // MAXPS(lower, v): a NaN v stays
  const float biased = std::fma(v, kLog2Reciprocal, kRoundingBias);
  const float m = biased - kRoundingBias;
  v = std::fma(m, kLog2High, v);
  v = std::fma(m, kLog2Low, v);
  uint32_t bits;
  std::memcpy(&bits, &biased, sizeof bits);
  bits = (bits << 23) + kMaximumExponent;  // 2^m: m in the exponent field
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float p = kPoly0;
#pragma GCC unroll 6
  for (float c : kPoly) p = std::fma(p, v, c);
  return p * scale;
}

// The 16 partial sums to one, in the fixed tree.
float reduce_lanes(float (&s)[kLanes]) {
  for (int half = kLanes / 2; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) s[l] += s[l + half];
  return s[0];
}

// From element `from` on (the vector loops' remainder): the terms into the
// lanes they belong to, then the sum. e may be null (LogSoftmax).
float finish_sum(const float* x, int64_t from, int64_t d, float neg_max, float* e, float (&lanes)[kLanes]) {
  for (int64_t i = from; i < d; ++i) {
    const float t = exp_term(x[i], neg_max);
    if (e) e[i] = t;
    lanes[i % kLanes] += t;
  }
  return reduce_lanes(lanes);
}

// The larger of m and v, m where v is NaN (MAXPS(v, m)): the row's max
// skips NaNs, as std::fmax would, without a call into libm.
inline float max_of(float m, float v) { return v > m ? v : m; }

float max_portable(const float* x, int64_t d) {
  float m = -INFINITY;
  for (int64_t i = 0; i < d; ++i) m = max_of(m, x[i]);
  return m;
}

// The outputs from the terms (Softmax, y holding them) or from x
// (LogSoftmax); one rounding per operation, so SSE2 (every x86-64) serves
// every path: a pass over a row in L1 costs little beside its exps.
void scale_row(float* y, int64_t d, float scale) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 s = _mm_set1_ps(scale);
  for (; i + 4 <= d; i += 4) _mm_storeu_ps(y + i, _mm_mul_ps(_mm_loadu_ps(y + i), s));
#endif
  for (; i < d; ++i) y[i] *= scale;
}
void shift_row(const float* x, float* y, int64_t d, float neg_max, float log_sum) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 nm = _mm_set1_ps(neg_max), ls = _mm_set1_ps(log_sum);
  for (; i + 4 <= d; i += 4) _mm_storeu_ps(y + i, _mm_sub_ps(_mm_add_ps(_mm_loadu_ps(x + i), nm), ls));
#endif
  for (; i < d; ++i) y[i] = (x[i] + neg_max) - log_sum;
}

float sum_exp_portable(const float* x, int64_t d, float neg_max, float* e) {
  float lanes[kLanes] = {};
  return finish_sum(x, 0, d, neg_max, e, lanes);
}

#if defined(QTOOL_SOFTMAX_X86)
__attribute__((target("avx2"))) float max_avx2(const float* x, int64_t d) {
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, m0);
  _mm256_store_ps(lanes + 8, m1);
  float m = -INFINITY;
  for (float v : lanes) m = max_of(m, v);
  for (; i < d; ++i) m = max_of(m, x[i]);
  return m;
}

__attribute__((target("avx2,fma"))) inline __m256 exp_term_avx2(__m256 x, __m256 neg_max) {
  const __m256 bias = _mm256_set1_ps(kRoundingBias);
  __m256 v = _mm256_max_ps(_mm256_set1_ps(kLowerRange), _mm256_add_ps(x, neg_max));
  const __m256 biased = _mm256_fmadd_ps(v, _mm256_set1_ps(kLog2Reciprocal), bias);
  const __m256 m = _mm256_sub_ps(biased, bias);
  v = _mm256_fmadd_ps(m, _mm256_set1_ps(kLog2High), v);
  v = _mm256_fmadd_ps(m, _mm256_set1_ps(kLog2Low), v);
  const __m256i scale = _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(biased), 23),
                                         _mm256_set1_epi32(static_cast<int>(kMaximumExponent)));
  __m256 p = _mm256_set1_ps(kPoly0);
#pragma GCC unroll 6
  for (float c : kPoly) p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(c));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// Lanes 0-7 in s0, 8-15 in s1.
__attribute__((target("avx2,fma"))) float sum_exp_avx2(const float* x, int64_t d, float neg_max, float* e) {
  const __m256 nm = _mm256_set1_ps(neg_max);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    const __m256 t0 = exp_term_avx2(_mm256_loadu_ps(x + i), nm);
    const __m256 t1 = exp_term_avx2(_mm256_loadu_ps(x + i + 8), nm);
    if (e) {
      _mm256_storeu_ps(e + i, t0);
      _mm256_storeu_ps(e + i + 8, t1);
    }
    s0 = _mm256_add_ps(s0, t0);
    s1 = _mm256_add_ps(s1, t1);
  }
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, s0);
  _mm256_store_ps(lanes + 8, s1);
  return finish_sum(x, i, d, neg_max, e, lanes);
}

// maskz forms with every lane set: the plain max trips GCC 12's
// -Wuninitialized inside avx512fintrin.h (as in conv_lanes_avx512.cpp); so
// does the plain shift.
constexpr __mmask16 kAll = 0xFFFF;

__attribute__((target("avx512f"))) float max_avx512(const float* x, int64_t d) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) m = _mm512_maskz_max_ps(kAll, _mm512_loadu_ps(x + i), m);
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, m);
  float r = -INFINITY;
  for (float v : lanes) r = max_of(r, v);
  for (; i < d; ++i) r = max_of(r, x[i]);
  return r;
}

__attribute__((target("avx512f"))) float sum_exp_avx512(const float* x, int64_t d, float neg_max, float* e) {
  const __m512 nm = _mm512_set1_ps(neg_max), bias = _mm512_set1_ps(kRoundingBias);
  const __m512 lower = _mm512_set1_ps(kLowerRange), log2e = _mm512_set1_ps(kLog2Reciprocal);
  const __m512 ln2_hi = _mm512_set1_ps(kLog2High), ln2_lo = _mm512_set1_ps(kLog2Low);
  const __m512i one = _mm512_set1_epi32(static_cast<int>(kMaximumExponent));
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    __m512 v = _mm512_maskz_max_ps(kAll, lower, _mm512_add_ps(_mm512_loadu_ps(x + i), nm));
    const __m512 biased = _mm512_fmadd_ps(v, log2e, bias);
    const __m512 m = _mm512_sub_ps(biased, bias);
    v = _mm512_fmadd_ps(m, ln2_hi, v);
    v = _mm512_fmadd_ps(m, ln2_lo, v);
    const __m512i scale = _mm512_add_epi32(_mm512_maskz_slli_epi32(kAll, _mm512_castps_si512(biased), 23), one);
    __m512 p = _mm512_set1_ps(kPoly0);
#pragma GCC unroll 6
    for (float c : kPoly) p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(c));
    p = _mm512_mul_ps(p, _mm512_castsi512_ps(scale));
    if (e) _mm512_storeu_ps(e + i, p);
    s = _mm512_add_ps(s, p);
  }
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, s);
  return finish_sum(x, i, d, neg_max, e, lanes);
}
#endif

struct RowKernels {
  float (*max)(const float*, int64_t);
  float (*sum_exp)(const float*, int64_t, float, float*);
};

// A level's kernels, or null where the build, the CPU or QTOOL_ISA lacks them.
const RowKernels* path_kernels(IsaCap level) {
  static const RowKernels portable{max_portable, sum_exp_portable};
  if (!float_path_runs(level)) return nullptr;
#if defined(QTOOL_SOFTMAX_X86)
  static const RowKernels avx2{max_avx2, sum_exp_avx2}, avx512{max_avx512, sum_exp_avx512};
  if (level == IsaCap::Avx512) return &avx512;
  if (level == IsaCap::Avx2) return &avx2;
#endif
  return level == IsaCap::Portable ? &portable : nullptr;
}

// The widest path, chosen once.
const RowKernels& row_kernels() {
  static const RowKernels& k = []() -> const RowKernels& {
    for (IsaCap level : {IsaCap::Avx512, IsaCap::Avx2})
      if (const RowKernels* p = path_kernels(level)) return *p;
    return *path_kernels(IsaCap::Portable);
  }();
  return k;
}

// One contiguous row; y may be x.
void row(const RowKernels& k, const float* x, int64_t d, float* y, bool log) {
  const float neg_max = -k.max(x, d);
  if (log) {
    shift_row(x, y, d, neg_max, std::log(k.sum_exp(x, d, neg_max, nullptr)));
  } else {
    scale_row(y, d, 1.0f / k.sum_exp(x, d, neg_max, y));
  }
}

// Slices `inner` apart (an axis other than the last) are gathered into a
// row, as ONNX Runtime transposes them to the last axis (Softmax-13,
// onnxruntime/core/providers/cpu/math/softmax.cc): the same bits whichever
// axis holds them. The slices go over the threads in runs of at least
// kElementPiece values (MLAS's MlasComputeSoftmax: 16384 per thread); each
// slice's bits do not depend on the split.
void rows(const float* x, int64_t outer, int64_t d, int64_t inner, float* y, bool log, int threads) {
  const int64_t slices = outer * inner, per_task = std::max<int64_t>(1, kElementPiece / d);
  parallel_for(threads, (slices + per_task - 1) / per_task, [&](int64_t task) {
    const RowKernels& k = row_kernels();
    const int64_t s0 = task * per_task, s1 = std::min(slices, s0 + per_task);
    if (inner == 1) {
      for (int64_t s = s0; s < s1; ++s) row(k, x + s * d, d, y + s * d, log);
      return;
    }
    thread_local std::vector<float> slice;
    slice.resize(static_cast<size_t>(d));
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t first = (s / inner) * d * inner + s % inner;
      for (int64_t a = 0; a < d; ++a) slice[a] = x[first + a * inner];
      row(k, slice.data(), d, slice.data(), log);
      for (int64_t a = 0; a < d; ++a) y[first + a * inner] = slice[a];
    }
  });
}

}  // namespace

void softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y, int threads) {
  rows(x, outer, axis_len, inner, y, false, threads);
}

void log_softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y, int threads) {
  rows(x, outer, axis_len, inner, y, true, threads);
}

float softmax_exp_term(float x, float neg_max) { return exp_term(x, neg_max); }

bool detail::softmax_row_f32(IsaCap level, const float* x, int64_t d, float* y, bool log) {
  const RowKernels* k = path_kernels(level);
  if (k) row(*k, x, d, y, log);
  return k != nullptr;
}

}  // namespace quant::kernels
