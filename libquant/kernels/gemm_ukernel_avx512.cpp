// AVX-512F float GEMM micro-kernels: an R x (16 V) tile in R * V zmm
// accumulators, V B loads and R broadcasts per k. Compiled with a target
// attribute; only called when the CPU reports avx512f.
#include "libquant/kernels/gemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace quant::kernels::detail {
namespace {

constexpr int64_t kPrefetchB = 16;  // rows of B ahead

// A prefetch of the line holding byte `offset` from p. The address is
// worked out as an integer: it may lie past the end of the operand (after
// the last panel), which a prefetch tolerates (it never faults) but pointer
// arithmetic does not. always_inline, as gemm_ukernel_avx2.cpp's helpers: a
// plain inline one inlined through the always_inline tile lost its
// prefetches under GCC 12.
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void prefetch(const float* p, int64_t offset,
                                                                                 bool into_l2) {
  const auto* line = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(offset));
  if (into_l2)
    _mm_prefetch(line, _MM_HINT_T1);
  else
    _mm_prefetch(line, _MM_HINT_T0);
}

// The lanes of gemm_epilogue_tile.inc: 16 floats, k-masks. maskz forms of
// max and min: the plain ones trip GCC 12's -Wmaybe-uninitialized inside
// avx512fintrin.h.
struct Lanes16 {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec splat(float x) { return _mm512_set1_ps(x); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  // VMAXPS / VMINPS return the second operand when either is NaN.
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec max_nan(Vec lo, Vec x) {
    return _mm512_maskz_max_ps(0xFFFF, lo, x);
  }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec min_nan(Vec hi, Vec x) {
    return _mm512_maskz_min_ps(0xFFFF, hi, x);
  }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec load(const float* p, Mask m, bool whole) {
    return whole ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static void store(float* p, Mask m, bool whole, Vec x) {
    if (whole)
      _mm512_storeu_ps(p, x);
    else
      _mm512_mask_storeu_ps(p, m, x);
  }
};

#define QTOOL_EPILOGUE_TARGET __attribute__((target("avx512f")))
#include "libquant/kernels/gemm_epilogue_tile.inc"
#undef QTOOL_EPILOGUE_TARGET

// One k of an R x (16 V) tile: V B loads at bk, R broadcasts from a, R x V
// multiply-adds.
template <int R, int V>
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void f32_step_avx512(__m512 (&acc)[R][V],
                                                                                     const float* a, const float* bk) {
  __m512 bv[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
  }
}

// The first R rows of an MR x (16 V) tile: a partial row panel (the last of
// M) runs only the multiply-adds of its rows. `kMr` is the panel height the
// A operand is packed with.
// With Rows, B's row k is at b + b_rows[k] (RowsMicroKernel).
template <int kMr, int R, int V, bool Rows>
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void f32_tile_avx512(
    int64_t kc, const float* a, const float* b, int64_t b_stride, const int64_t* b_rows, float* c, int64_t ldc,
    int n_valid, const MicroEpilogue& ep) {
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  // Prefetches, measured on resnet18 float (qrun --bench, pinned, one
  // thread): 26.0-28.7 -> 24.1-25.8 ms, mobilenet_v2 6.5-6.6 -> 6.1-6.5 ms.
  // The late layers' weights (9.4 MB per 3x3 conv of layer4) come from L3,
  // and the hardware prefetchers left the kernel waiting on them:
  //  - the next A panel (packed weights lie panel after panel) into L2, one
  //    line every second k, so that it is there when this panel is done;
  //  - B kPrefetchB rows ahead into L1: a packed panel's rows all (past its
  //    end lies the next panel, a run's next tile), a B read in place only
  //    while the rows lie within the depth block (past it they are other
  //    rows of the input, or past its end: at a depth of 16, a 1x1 conv of
  //    16 -> 96 channels at 112 x 112, fetching them cost 10%).
  const int64_t a_next = kc * kMr * static_cast<int64_t>(sizeof(float));
  const int64_t k_prefetch = Rows ? 0 : b_stride == 16 * V ? kc : std::max<int64_t>(0, kc - kPrefetchB);
  int64_t k = 0;
  for (; k < k_prefetch; ++k) {
    if ((k & 1) == 0) prefetch(a, a_next, true);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      prefetch(b, (kPrefetchB * b_stride + 16 * v) * static_cast<int64_t>(sizeof(float)), false);
    f32_step_avx512<R, V>(acc, a, b);
    a += kMr;
    b += b_stride;
  }
  for (; k < kc; ++k) {
    if ((k & 1) == 0) prefetch(a, a_next, true);
    f32_step_avx512<R, V>(acc, a, Rows ? b + b_rows[k] : b);
    a += kMr;
    if constexpr (!Rows) b += b_stride;
  }
  // Partial tiles (edges of M and N) load and store through masks: no
  // scalar tail. Whole tiles do not: a masked load or store costs several
  // times a plain one on some CPUs (AMD Zen), and the epilogue of every
  // depth block (accumulate) reads and writes the whole tile.
  __mmask16 mask[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) mask[v] = static_cast<__mmask16>((1u << std::clamp(n_valid - 16 * v, 0, 16)) - 1u);
  if (n_valid >= 16 * V)
    store_tile<Lanes16, R, V, true>(acc, c, ldc, mask, ep);
  else
    store_tile<Lanes16, R, V, false>(acc, c, ldc, mask, ep);
}

template <int kMr, int R, int V, bool Rows>
__attribute__((target("avx512f"))) void f32_gemm_avx512_rows(int64_t kc, const float* a, const float* b,
                                                              int64_t b_stride, const int64_t* b_rows, float* c,
                                                              int64_t ldc, int n_valid, const MicroEpilogue& ep) {
  f32_tile_avx512<kMr, R, V, Rows>(kc, a, b, b_stride, b_rows, c, ldc, n_valid, ep);
}

// GemmIsa::kernel_run: whole kMr x (16 V) tiles, the tile inlined in the
// loop. With the B prefetch kept within the block, one layer alone (best of
// 400 calls, stop 53): 1x1 16 -> 96 at 112 x 112 0.39-0.41 -> 0.334 ms, 32 ->
// 16 at 112 0.12 -> 0.10, 24 -> 144 and 144 -> 24 at 56 7-15% faster, K >= 96
// within the noise.
template <int kMr, int R, int V>
__attribute__((target("avx512f"))) void f32_gemm_avx512_run_rows(int64_t kc, const float* a, const float* b,
                                                                  int64_t b_stride, int64_t b_step, float* c,
                                                                  int64_t ldc, int64_t tiles, const MicroEpilogue& ep) {
  MicroEpilogue e = ep;
  for (int64_t t = 0; t < tiles; ++t) {
    f32_tile_avx512<kMr, R, V, false>(kc, a, b + t * b_step, b_stride, nullptr, c + t * 16 * V, ldc, 16 * V, e);
    if (e.col_bias) e.col_bias += 16 * V;
    if (e.residual) e.residual += 16 * V;
  }
}

template <int kMr, int V, int... Rs>
void dispatch_run(std::integer_sequence<int, Rs...>, int64_t kc, const float* a, const float* b, int64_t b_stride,
                  int64_t b_step, float* c, int64_t ldc, int m_valid, int64_t tiles, const MicroEpilogue& ep) {
  using Fn = void (*)(int64_t, const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                      const MicroEpilogue&);
  static constexpr Fn kRuns[] = {f32_gemm_avx512_run_rows<kMr, Rs + 1, V>...};
  kRuns[std::clamp(m_valid, 1, kMr) - 1](kc, a, b, b_stride, b_step, c, ldc, tiles, ep);
}
template <int kMr, int V>
void f32_gemm_avx512_run(int64_t kc, const float* a, const float* b, int64_t b_stride, int64_t b_step, float* c,
                         int64_t ldc, int m_valid, int64_t tiles, const MicroEpilogue& ep) {
  dispatch_run<kMr, V>(std::make_integer_sequence<int, kMr>{}, kc, a, b, b_stride, b_step, c, ldc, m_valid, tiles,
                       ep);
}

// Dispatches a tile to the kernel for its valid rows, 1..kMr.
template <int kMr, int V, bool Rows, int... Rs>
void dispatch_rows(std::integer_sequence<int, Rs...>, int64_t kc, const float* a, const float* b, int64_t b_stride,
                   const int64_t* b_rows, float* c, int64_t ldc, int m_valid, int n_valid, const MicroEpilogue& ep) {
  using Fn = void (*)(int64_t, const float*, const float*, int64_t, const int64_t*, float*, int64_t, int,
                      const MicroEpilogue&);
  static constexpr Fn kRows[] = {f32_gemm_avx512_rows<kMr, Rs + 1, V, Rows>...};
  kRows[std::clamp(m_valid, 1, kMr) - 1](kc, a, b, b_stride, b_rows, c, ldc, n_valid, ep);
}

// A panel with at most 16 valid columns runs one vector per row: its 8
// multiply-add chains still cover the FMA latency, and the second vector's
// multiply-adds were all wasted (a 14 x 14 map, 196 = 6 x 32 + 4 columns,
// ends in such a panel). Each lane's chain is the same, so the same bits.
template <int kMr, int V>
void f32_gemm_avx512(int64_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc, int m_valid,
                     int n_valid, const MicroEpilogue& ep) {
  if (V > 1 && n_valid <= 16)
    return dispatch_rows<kMr, 1, false>(std::make_integer_sequence<int, kMr>{}, kc, a, b, b_stride, nullptr, c, ldc,
                                        m_valid, n_valid, ep);
  dispatch_rows<kMr, V, false>(std::make_integer_sequence<int, kMr>{}, kc, a, b, b_stride, nullptr, c, ldc, m_valid,
                               n_valid, ep);
}
template <int kMr, int V>
void f32_gemm_avx512_b_rows(int64_t kc, const float* a, const float* b, const int64_t* b_rows, float* c, int64_t ldc,
                            int m_valid, int n_valid, const MicroEpilogue& ep) {
  if (V > 1 && n_valid <= 16)
    return dispatch_rows<kMr, 1, true>(std::make_integer_sequence<int, kMr>{}, kc, a, b, 0, b_rows, c, ldc, m_valid,
                                       n_valid, ep);
  dispatch_rows<kMr, V, true>(std::make_integer_sequence<int, kMr>{}, kc, a, b, 0, b_rows, c, ldc, m_valid, n_valid,
                              ep);
}

// 8 x 32: 16 accumulators, two B loads and eight broadcasts per k. MR = 8
// divides the channel counts of common CNNs (16, 24, 32, 64, 96, ...), so
// few rows are wasted on padding. 6 x 64, 12 x 32 and 14 x 32 tiles ran no
// faster on resnet18's and mobilenet_v2's layer shapes (a local benchmark of
// gemm_f32_packed, 2026-11-26).
const GemmIsa kAvx512{"avx512", 8, 32, f32_gemm_avx512<8, 2>, nullptr, 0, f32_gemm_avx512_b_rows<8, 2>, nullptr,
                      f32_gemm_avx512_run<8, 2>};

}  // namespace

const GemmIsa* const kGemmIsaAvx512 = &kAvx512;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const GemmIsa* const kGemmIsaAvx512 = nullptr;
}

#endif
