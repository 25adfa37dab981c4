// Depthwise 3x3 plane kernels (conv_depthwise_3x3.h): AVX-512 (16 outputs per
// vector, masked loads for the last block) and AVX2 + FMA (8 outputs, the rest
// of a row through the border path). Both are compiled with target
// attributes and picked at run time, as the GEMM micro-kernels are.
#include "libquant/kernels/conv_depthwise_3x3.h"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {
namespace {

// The input rows under kernel rows 0..2 for output row oh (null: padding).
struct Rows {
  const float* r[3];
};

Rows rows_of(const Depthwise3x3Plane& p, int64_t oh) {
  Rows rows{};
  for (int64_t kh = 0; kh < 3; ++kh) {
    const int64_t ih = oh * p.stride_h + kh - p.pad_top;
    rows.r[kh] = ih >= 0 && ih < p.in_h ? p.x + ih * p.in_w : nullptr;
  }
  return rows;
}

// NaN passes through, as clamp_f32: v < lo ? lo : v, then v > hi ? hi : v.
[[gnu::always_inline]] inline float clamp_scalar(float v, const Depthwise3x3Plane& p) {
  if (!p.clamp) return v;
  v = v < p.lo ? p.lo : v;
  return v > p.hi ? p.hi : v;
}

// One output with every tap checked against the row ends. Inlined into the
// ISA kernels, so __builtin_fmaf becomes their fused multiply-add instruction
// (the interior's arithmetic, bit for bit).
[[gnu::always_inline]] inline float border_output(const Depthwise3x3Plane& p, const Rows& rows, int64_t ow) {
  float acc = p.bias;
  const int64_t ix0 = ow * p.stride_w - p.pad_left;
  for (int kh = 0; kh < 3; ++kh) {
    if (!rows.r[kh]) continue;
    for (int kw = 0; kw < 3; ++kw) {
      const int64_t ix = ix0 + kw;
      if (ix >= 0 && ix < p.in_w) acc = __builtin_fmaf(p.w[kh * 3 + kw], rows.r[kh][ix], acc);
    }
  }
  return clamp_scalar(acc, p);
}

// Columns [lo, hi) of every row have all three taps inside the input row.
struct Interior {
  int64_t lo, hi;
};

Interior interior_of(const Depthwise3x3Plane& p) {
  const int64_t sw = p.stride_w;
  const int64_t lo = std::min((p.pad_left + sw - 1) / sw,
                              p.out_w);  // first ow with ow*sw - pad >= 0
  // Last: ow*sw - pad + 2 <= in_w - 1.
  const int64_t hi = p.in_w >= 3 ? std::min((p.in_w - 3 + p.pad_left) / sw + 1, p.out_w) : 0;
  return {lo, std::max(lo, hi)};
}

// The row loop shared by the ISA kernels: border outputs one at a time,
// `interior(rows, yrow, lo, hi)` for the rest; it returns the first column it
// left to the border path.
template <class InteriorFn>
[[gnu::always_inline]] inline void for_each_row(const Depthwise3x3Plane& p, InteriorFn interior) {
  const Interior in = interior_of(p);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const Rows rows = rows_of(p, oh);
    float* yrow = p.y + oh * p.out_w;
    for (int64_t ow = 0; ow < in.lo; ++ow) yrow[ow] = border_output(p, rows, ow);
    for (int64_t ow = interior(rows, yrow, in.lo, in.hi); ow < p.out_w; ++ow) yrow[ow] = border_output(p, rows, ow);
  }
}

__mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << std::clamp<int64_t>(n, 0, 16)) - 1u); }

__attribute__((target("avx512f"))) void dwconv3x3_f32_avx512(const Depthwise3x3Plane& p) {
  __m512 w[9];
  for (int i = 0; i < 9; ++i) w[i] = _mm512_set1_ps(p.w[i]);
  const __m512 bias = _mm512_set1_ps(p.bias), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  // (A lambda does not inherit its function's target: it names its own.)
  for_each_row(
      p, [&](const Rows& rows, float* yrow, int64_t ow0, int64_t ow1) __attribute__((target("avx512f"))) {
        for (int64_t ow = ow0; ow < ow1; ow += 16) {
          const int64_t n = std::min<int64_t>(16, ow1 - ow);
          __m512 acc = bias;
          for (int kh = 0; kh < 3; ++kh) {
            if (!rows.r[kh]) continue;
            const float* q = rows.r[kh] + ow * p.stride_w - p.pad_left;
            __m512 x0, x1, x2;
            if (p.stride_w == 1) {
              const __mmask16 m = first_lanes(n);
              x0 = _mm512_maskz_loadu_ps(m, q);
              x1 = _mm512_maskz_loadu_ps(m, q + 1);
              x2 = _mm512_maskz_loadu_ps(m, q + 2);
            } else {
              // Lane l reads q[2l + kw]: even and odd lanes of q[0..31] for kw
              // 0 and 1, even lanes of q[2..33] for kw 2; the masks stop at the
              // last element the n outputs read (q[2n-1], q[2n]).
              const __m512 a = _mm512_maskz_loadu_ps(first_lanes(2 * n), q);
              const __m512 b = _mm512_maskz_loadu_ps(first_lanes(2 * n - 16), q + 16);
              const __m512 a2 = _mm512_maskz_loadu_ps(first_lanes(2 * n - 1), q + 2);
              const __m512 b2 = _mm512_maskz_loadu_ps(first_lanes(2 * n - 17), q + 18);
              x0 = _mm512_permutex2var_ps(a, even, b);
              x1 = _mm512_permutex2var_ps(a, odd, b);
              x2 = _mm512_permutex2var_ps(a2, even, b2);
            }
            acc = _mm512_fmadd_ps(w[kh * 3], x0, acc);
            acc = _mm512_fmadd_ps(w[kh * 3 + 1], x1, acc);
            acc = _mm512_fmadd_ps(w[kh * 3 + 2], x2, acc);
          }
          // max(lo, v), min(hi, v): the second operand (v) is returned for NaN.
          // maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized.
          if (p.clamp) acc = _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, acc));
          _mm512_mask_storeu_ps(yrow + ow, first_lanes(n), acc);
        }
        return ow1;
      });
}

// x[0], x[2], ..., x[14] in order (AVX2 has no two-source permute).
__attribute__((target("avx2,fma"))) __m256 even_lanes(__m256 lo, __m256 hi) {
  const __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}
__attribute__((target("avx2,fma"))) __m256 odd_lanes(__m256 lo, __m256 hi) {
  const __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

__attribute__((target("avx2,fma"))) void dwconv3x3_f32_avx2(const Depthwise3x3Plane& p) {
  __m256 w[9];
  for (int i = 0; i < 9; ++i) w[i] = _mm256_set1_ps(p.w[i]);
  const __m256 bias = _mm256_set1_ps(p.bias), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  for_each_row(
      p, [&](const Rows& rows, float* yrow, int64_t ow0, int64_t ow1) __attribute__((target("avx2,fma"))) {
        // Full blocks of 8 only. Stride 2 loads q[0..17], one past the last
        // element the block reads (q[16]); that one is inside the row when a
        // further interior output follows (ow + 9 <= ow1).
        const int64_t need = p.stride_w == 1 ? 8 : 9;
        int64_t ow = ow0;
        for (; ow + need <= ow1; ow += 8) {
          __m256 acc = bias;
          for (int kh = 0; kh < 3; ++kh) {
            if (!rows.r[kh]) continue;
            const float* q = rows.r[kh] + ow * p.stride_w - p.pad_left;
            __m256 x0, x1, x2;
            if (p.stride_w == 1) {
              x0 = _mm256_loadu_ps(q);
              x1 = _mm256_loadu_ps(q + 1);
              x2 = _mm256_loadu_ps(q + 2);
            } else {
              const __m256 a = _mm256_loadu_ps(q), b = _mm256_loadu_ps(q + 8);
              x0 = even_lanes(a, b);
              x1 = odd_lanes(a, b);
              x2 = even_lanes(_mm256_loadu_ps(q + 2), _mm256_loadu_ps(q + 10));
            }
            acc = _mm256_fmadd_ps(w[kh * 3], x0, acc);
            acc = _mm256_fmadd_ps(w[kh * 3 + 1], x1, acc);
            acc = _mm256_fmadd_ps(w[kh * 3 + 2], x2, acc);
          }
          if (p.clamp) acc = _mm256_min_ps(hi, _mm256_max_ps(lo, acc));
          _mm256_storeu_ps(yrow + ow, acc);
        }
        return ow;
      });
}

const Depthwise3x3Isa kAvx2{"avx2", dwconv3x3_f32_avx2};
const Depthwise3x3Isa kAvx512{"avx512", dwconv3x3_f32_avx512};

}  // namespace

std::vector<const Depthwise3x3Isa*> supported_depthwise_3x3_isas() {
  std::vector<const Depthwise3x3Isa*> isas;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back(&kAvx2);
  if (__builtin_cpu_supports("avx512f")) isas.push_back(&kAvx512);
  return isas;
}

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
std::vector<const Depthwise3x3Isa*> supported_depthwise_3x3_isas() { return {}; }
}  // namespace quant::kernels::detail

#endif
