// AVX2 + FMA float GEMM micro-kernel, 6 x 16 tile: 12 ymm accumulators, two
// B loads and six broadcasts per k (the classic Haswell BLIS shape). Compiled
// with a target attribute, so the rest of the library needs no -mavx2; it is
// only called when the CPU reports avx2 and fma.
#include "libquant/kernels/gemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 6, kNr = 16;

__attribute__((target("avx2,fma"))) void f32_gemm_avx2_6x16(int64_t kc, const float* a, const float* b,
                                                             int64_t b_stride, float* c, int64_t ldc, int m_valid,
                                                             int n_valid, const MicroEpilogue& ep) {
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += b_stride;
  }
  if (m_valid == kMr && n_valid == kNr) {
    const __m256 alpha = _mm256_set1_ps(ep.alpha);
    const __m256 lo = _mm256_set1_ps(ep.lo), hi = _mm256_set1_ps(ep.hi);
    const bool add_col = ep.last && ep.col_bias, add_row = ep.last && ep.row_bias, clamp = ep.last && ep.clamp;
    const __m256 cb0 = add_col ? _mm256_loadu_ps(ep.col_bias) : _mm256_setzero_ps();
    const __m256 cb1 = add_col ? _mm256_loadu_ps(ep.col_bias + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* row = c + i * ldc;
      __m256 v0 = acc[i][0], v1 = acc[i][1];
      if (ep.alpha != 1.0f) {
        v0 = _mm256_mul_ps(v0, alpha);
        v1 = _mm256_mul_ps(v1, alpha);
      }
      if (ep.accumulate) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(row));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(row + 8));
      }
      if (add_row) {
        const __m256 rb = _mm256_set1_ps(ep.row_bias[i]);
        v0 = _mm256_add_ps(v0, rb);
        v1 = _mm256_add_ps(v1, rb);
      }
      if (add_col) {
        v0 = _mm256_add_ps(v0, cb0);
        v1 = _mm256_add_ps(v1, cb1);
      }
      if (ep.last && ep.residual) {
        const float* r = ep.residual + i * ep.ldr;
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(r));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(r + 8));
      }
      if (clamp) {
        // max(lo, v), min(hi, v): v, the second operand, comes back for a NaN.
        v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
        v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
      }
      _mm256_storeu_ps(row, v0);
      _mm256_storeu_ps(row + 8, v1);
    }
    return;
  }
  alignas(32) float tile[kMr * kNr];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    _mm256_store_ps(tile + i * kNr, acc[i][0]);
    _mm256_store_ps(tile + i * kNr + 8, acc[i][1]);
  }
  store_tile_scalar(tile, kNr, c, ldc, m_valid, n_valid, ep);
}

const GemmIsa kAvx2{"avx2", kMr, kNr, f32_gemm_avx2_6x16};

}  // namespace

const GemmIsa* const kGemmIsaAvx2 = &kAvx2;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const GemmIsa* const kGemmIsaAvx2 = nullptr;
}

#endif
