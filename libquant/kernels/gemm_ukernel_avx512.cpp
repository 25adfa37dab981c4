// AVX-512F float GEMM micro-kernel, 8 x 32 tile: 16 zmm accumulators, two B
// loads and eight broadcasts per k. MR = 8 divides the channel counts of
// common CNNs (16, 24, 32, 64, 96, ...), so few rows are wasted on padding.
// Compiled with a target attribute; only called when the CPU reports avx512f.
#include "libquant/kernels/gemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 8, kNr = 32;

__attribute__((target("avx512f"))) void f32_gemm_avx512_8x32(int64_t kc, const float* a, const float* b,
                                                              int64_t b_stride, float* c, int64_t ldc, int m_valid,
                                                              int n_valid, const MicroEpilogue& ep) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += b_stride;
  }
  // Partial tiles (edges of M and N) load and store through masks: no
  // scalar tail. Whole tiles do not: a masked load or store costs several
  // times a plain one on some CPUs (AMD Zen), and the epilogue of every
  // depth block (accumulate) reads and writes the whole tile.
  const __mmask16 m0 = static_cast<__mmask16>((1u << std::min(n_valid, 16)) - 1u);
  const __mmask16 m1 = static_cast<__mmask16>((1u << std::clamp(n_valid - 16, 0, 16)) - 1u);
  const bool whole = n_valid >= 32;
  auto load = [&](__mmask16 m, const float* p) __attribute__((target("avx512f"))) {
    return whole ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  };
  const __m512 alpha = _mm512_set1_ps(ep.alpha);
  const __m512 lo = _mm512_set1_ps(ep.lo), hi = _mm512_set1_ps(ep.hi);
  const bool add_col = ep.last && ep.col_bias, add_row = ep.last && ep.row_bias, clamp = ep.last && ep.clamp;
  const bool add_residual = ep.last && ep.residual;
  const __m512 cb0 = add_col ? _mm512_maskz_loadu_ps(m0, ep.col_bias) : _mm512_setzero_ps();
  const __m512 cb1 = add_col ? _mm512_maskz_loadu_ps(m1, ep.col_bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    if (i >= m_valid) break;
    float* row = c + i * ldc;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (ep.alpha != 1.0f) {
      v0 = _mm512_mul_ps(v0, alpha);
      v1 = _mm512_mul_ps(v1, alpha);
    }
    if (ep.accumulate) {
      v0 = _mm512_add_ps(v0, load(m0, row));
      v1 = _mm512_add_ps(v1, load(m1, row + 16));
    }
    if (add_row) {
      const __m512 rb = _mm512_set1_ps(ep.row_bias[i]);
      v0 = _mm512_add_ps(v0, rb);
      v1 = _mm512_add_ps(v1, rb);
    }
    if (add_col) {
      v0 = _mm512_add_ps(v0, cb0);
      v1 = _mm512_add_ps(v1, cb1);
    }
    if (add_residual) {
      const float* r = ep.residual + i * ep.ldr;
      v0 = _mm512_add_ps(v0, load(m0, r));
      v1 = _mm512_add_ps(v1, load(m1, r + 16));
    }
    if (clamp) {
      // max(lo, v) then min(hi, v): the second operand, v, comes back for a
      // NaN, which passes through as in store_tile_scalar. maskz forms: the
      // plain ones trip GCC 12's -Wmaybe-uninitialized inside avx512fintrin.h.
      v0 = _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, v0));
      v1 = _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, v1));
    }
    if (whole) {
      _mm512_storeu_ps(row, v0);
      _mm512_storeu_ps(row + 16, v1);
    } else {
      _mm512_mask_storeu_ps(row, m0, v0);
      _mm512_mask_storeu_ps(row + 16, m1, v1);
    }
  }
}

const GemmIsa kAvx512{"avx512", kMr, kNr, f32_gemm_avx512_8x32};

}  // namespace

const GemmIsa* const kGemmIsaAvx512 = &kAvx512;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const GemmIsa* const kGemmIsaAvx512 = nullptr;
}

#endif
