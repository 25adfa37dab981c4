// AVX2 + FMA float GEMM micro-kernels: an R x (8 V) tile in R * V ymm
// accumulators, V B loads and R broadcasts per k. Compiled with a target
// attribute, so the rest of the library needs no -mavx2; only called when
// the CPU reports avx2 and fma.
//
// The whole tile is 6 x 16: 12 accumulators, two B vectors and one
// broadcast fill 15 of the 16 ymm registers, the shape BLIS picked for
// Haswell by the analysis of Low et al., "Analytical Modeling Is Enough for
// High-Performance BLIS" (ACM TOMS 43(2), 2016): MR x NR/8 independent FMA
// chains must cover latency x ports (5 x 2 on Haswell, 4 x 2 later), and
// the broadcasts plus B loads per k (6 + 2) stay within the two load ports'
// rate while the FMAs (12) take 6 cycles. oneDNN's AVX2 sgemm uses the same
// 6 x 16 (its "avx2 kernel 16x6", transposed). Edge tiles run only the
// multiply-adds of their valid rows (R < 6) and of one vector when at most 8
// columns are valid: a 7 x 7 map (49 columns, resnet18's layer4) ends in a
// panel of 1 column, which computed 16 wasted 15/16 of that panel.
//
// Blocking is gemm_packed's, shared with AVX-512: depth blocks of kGemmKc =
// 256 keep an A panel (6 x 256 floats, 6 KB) and a B panel (256 x 16, 16 KB)
// in a 32-48 KB L1, and a B block in L2 while the A panels sweep it (256 x
// 512 columns, 512 KB, in a 1-2 MB L2; 128 columns in a 256 KB one:
// gemm_block_columns). BLIS's order for Haswell (each B panel
// kept in L1 across a block of A panels held in L2, MC = 96 rows) ran slower
// on this host: resnet18's convs at 67% of the FMA peak against 73%,
// mobilenet_v2's pointwise ones 62% against 69% (kernel_bench float-avx2,
// 2026-11-26).
#include "libquant/kernels/gemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 6, kNr = 16;

// The address of byte `offset` from p for a prefetch, worked out as an
// integer: it may lie past the end of the operand, which a prefetch
// tolerates (it never faults) but pointer arithmetic does not.
inline const char* prefetch_address(const float* p, int64_t offset) {
  return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(offset));
}
// Prefetches of that line into L2, into L1, and into L1 for writing (PREFETCHW).
// always_inline: called from the always_inline tile (f32_tile_avx2), plain
// inline helpers lost their PREFETCHT0/T1 altogether under GCC 12 -O2 (none
// left in the object code).
[[gnu::always_inline]] inline void prefetch_l2(const float* p, int64_t offset) {
  _mm_prefetch(prefetch_address(p, offset), _MM_HINT_T1);
}
[[gnu::always_inline]] inline void prefetch_l1(const float* p, int64_t offset) {
  _mm_prefetch(prefetch_address(p, offset), _MM_HINT_T0);
}
__attribute__((target("prfchw"))) inline void prefetch_write(const float* p, int64_t offset) {
  __builtin_prefetch(prefetch_address(p, offset), 1, 3);
}

// Lanes [0, count) of 8, count clamped to [0, 8], as a maskload/maskstore mask.
__attribute__((target("avx2"))) inline __m256i first_lanes(int count) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::clamp(count, 0, 8)), iota);
}

// The lanes of gemm_epilogue_tile.inc: 8 floats, masks of maskload/maskstore.
struct Lanes8 {
  using Vec = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec splat(float x) { return _mm256_set1_ps(x); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  // VMAXPS / VMINPS return the second operand when either is NaN.
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec max_nan(Vec lo, Vec x) { return _mm256_max_ps(lo, x); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec min_nan(Vec hi, Vec x) { return _mm256_min_ps(hi, x); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec load(const float* p, Mask m, bool whole) {
    return whole ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
  }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static void store(float* p, Mask m, bool whole, Vec x) {
    if (whole)
      _mm256_storeu_ps(p, x);
    else
      _mm256_maskstore_ps(p, m, x);
  }
};

#define QTOOL_EPILOGUE_TARGET __attribute__((target("avx2,fma")))
#include "libquant/kernels/gemm_epilogue_tile.inc"
#undef QTOOL_EPILOGUE_TARGET

// One k of an R x (8 V) tile: V B loads, R broadcasts, R x V multiply-adds.
// B's vector v at b + v * b_step (8: one run of columns; RowsPairKernel's
// two runs lie further apart).
template <int R, int V>
[[gnu::always_inline]] __attribute__((target("avx2,fma"))) inline void f32_step(__m256 (&acc)[R][V], const float* a,
                                                                                const float* b, int64_t b_step = 8) {
  __m256 bv[V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_ps(b + b_step * v);
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
  }
}

// The first R rows and 8 V columns of a 6 x 16 tile (the A panel is packed 6
// rows high, B panels 16 wide whatever R and V).
// With Rows, B's row k is at b + b_rows[k] instead (RowsMicroKernel).
template <int R, int V, bool Rows>
[[gnu::always_inline]] __attribute__((target("avx2,fma,prfchw"))) inline void f32_tile_avx2(
    int64_t kc, const float* a, const float* b, int64_t b_stride, const int64_t* b_rows, float* c, int64_t ldc,
    int n_valid, const MicroEpilogue& ep) {
  __m256 acc[R][V];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
  // The next A panel (packed weights lie panel after panel) into L2, a line
  // every second k (48 bytes of panel), as the AVX-512 kernel does: resnet18's
  // layer4 weights (9.4 MB per 3x3 conv) come from L3, and this took its
  // convs from 58-60% to 65-67% of the FMA peak (kernel_bench float-avx2,
  // the two interleaved in one run); other layers moved within the noise.
  // Prefetching B 8 rows ahead into L1, as the AVX-512 kernel also does,
  // gained nothing here (B panels of 16 floats stream well from L2), and
  // "k % 3" in place of "k & 1" cost 5% (a multiply per k).
  //
  // The k loop runs in pairs, one prefetch per pair: a branch and a counter
  // update less per k. A 6 x 16 tile on L1-resident panels ran 0.4-3.2%
  // faster so (four runs, the two loops alternating in one process);
  // kernel_bench float-avx2, three runs alternating with the loop before:
  // resnet18's convs 88.5-91.5% -> 91.4-91.8% of the FMA peak (one more run
  // fell in a slow spell), mobilenet_v2's pointwise 84.8-89.7% -> 87.8-93.1%.
  //
  // B read in place (a row-major B, b_stride its row stride: a 1x1 conv's
  // input planes) has one stream per k, too many for the hardware
  // prefetchers: the tile fetches its rows two panels ahead into L1 (128
  // bytes on). One layer alone, QTOOL_ISA=avx2, 1 thread, best of 300 calls,
  // alternating, 2026-11-30: 1x1 144 -> 24 at 56 x 56 from 59-67% to 72-78%
  // of the FMA peak, 96 -> 24 at 56 70-73% -> 80%, 32 -> 16 at 112 59-62% ->
  // 69-73%; wide ones (16 -> 96 at 112, whose output is the bound) and those
  // of 14 x 14 maps within the noise. One panel ahead gained half as much.
  const int64_t a_next = kc * kMr * static_cast<int64_t>(sizeof(float));
  const auto bk = [&](int64_t k) { return Rows ? b + b_rows[k] : b + k * b_stride; };
  // A short depth (a 1x1 conv of 16-32 input channels) stores about as much
  // as it multiplies: the next tile's rows of C (columns on) are fetched for
  // writing while this one computes. 1x1 16 -> 96 at 112 x 112 (4.8 MB of
  // output), one layer alone, QTOOL_ISA=avx2, alternating: 8-10% faster;
  // 24 -> 144 at 56 and 32 -> 192 at 28 within the noise. (PREFETCHW: a NOP
  // on the Intel CPUs that lack it.)
  if (kc <= 32)
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) prefetch_write(c + i * ldc, kNr * static_cast<int64_t>(sizeof(float)));
  int64_t k = 0;
  if (!Rows && b_stride != kNr) {
    for (; k + 2 <= kc; k += 2) {
      prefetch_l2(a + k * kMr, a_next);
      prefetch_l1(bk(k), 2 * kNr * static_cast<int64_t>(sizeof(float)));
      prefetch_l1(bk(k + 1), 2 * kNr * static_cast<int64_t>(sizeof(float)));
      f32_step<R, V>(acc, a + k * kMr, bk(k));
      f32_step<R, V>(acc, a + (k + 1) * kMr, bk(k + 1));
    }
  }
  for (; k + 2 <= kc; k += 2) {
    prefetch_l2(a + k * kMr, a_next);
    f32_step<R, V>(acc, a + k * kMr, bk(k));
    f32_step<R, V>(acc, a + (k + 1) * kMr, bk(k + 1));
  }
  if (k < kc) f32_step<R, V>(acc, a + k * kMr, bk(k));
  // Partial tiles (edges of N) load and store through masks (VMASKMOVPS
  // neither reads nor writes a masked-off lane); whole tiles use plain
  // moves, which cost less on every AVX2 CPU (and far less on AMD Zen), and
  // build no masks.
  __m256i mask[V];
  const bool whole = n_valid >= 8 * V;
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) mask[v] = whole ? _mm256_set1_epi32(-1) : first_lanes(n_valid - 8 * v);
  if (whole)
    store_tile<Lanes8, R, V, true>(acc, c, ldc, mask, ep);
  else
    store_tile<Lanes8, R, V, false>(acc, c, ldc, mask, ep);
}

template <int R, int V, bool Rows>
__attribute__((target("avx2,fma,prfchw"))) void f32_gemm_avx2_rows(int64_t kc, const float* a, const float* b,
                                                            int64_t b_stride, const int64_t* b_rows, float* c,
                                                            int64_t ldc, int n_valid, const MicroEpilogue& ep) {
  f32_tile_avx2<R, V, Rows>(kc, a, b, b_stride, b_rows, c, ldc, n_valid, ep);
}

// GemmIsa::kernel_run: whole 6 x 16 tiles, the tile inlined in the loop
// (the preamble's addresses and the epilogue's fields worked out once). One
// layer alone (conv_f32_fast, Relu fused, best of 500 calls, QTOOL_ISA=avx2,
// stop 53): 1x1 16 -> 96 at 112 x 112 0.448 -> 0.400 ms (67% -> 76% of the
// FMA peak), at 28 x 28 0.028 -> 0.026; 32 -> 192 at 28 0.097 -> 0.091;
// deeper ones 1-3% (K = 960: within the noise).
template <int R>
__attribute__((target("avx2,fma,prfchw"))) void f32_gemm_avx2_run(int64_t kc, const float* a, const float* b,
                                                                   int64_t b_stride, int64_t b_step, float* c,
                                                                   int64_t ldc, int64_t tiles,
                                                                   const MicroEpilogue& ep) {
  MicroEpilogue e = ep;
  for (int64_t t = 0; t < tiles; ++t) {
    f32_tile_avx2<R, 2, false>(kc, a, b + t * b_step, b_stride, nullptr, c + t * kNr, ldc, kNr, e);
    if (e.col_bias) e.col_bias += kNr;
    if (e.residual) e.residual += kNr;
  }
}

using RunFn = void (*)(int64_t, const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                       const MicroEpilogue&);
template <int... Rs>
constexpr std::array<RunFn, sizeof...(Rs)> run_table(std::integer_sequence<int, Rs...>) {
  return {f32_gemm_avx2_run<Rs + 1>...};
}
constexpr auto kRuns = run_table(std::make_integer_sequence<int, kMr>{});

void f32_gemm_avx2_6x16_run(int64_t kc, const float* a, const float* b, int64_t b_stride, int64_t b_step, float* c,
                            int64_t ldc, int m_valid, int64_t tiles, const MicroEpilogue& ep) {
  kRuns[static_cast<size_t>(std::clamp(m_valid, 1, kMr) - 1)](kc, a, b, b_stride, b_step, c, ldc, tiles, ep);
}

// RowsPairKernel's tile: the first R rows of two runs of h <= 8 columns, B's
// run 2 at b_step from run 1 and C's at c_step, as two vectors of one tile:
// 2 R chains of multiply-adds per k, as many as a whole tile's, where a half
// panel alone (f32_gemm_avx2_rows<R, 1>) has R. A 3x3 conv of 64 channels
// at 56 x 56 spent 17% of its time in those (perf, QTOOL_ISA=avx2).
template <int R>
__attribute__((target("avx2,fma"))) void f32_gemm_avx2_pair(int64_t kc, const float* a, const float* b,
                                                            const int64_t* b_rows, int64_t b_step, float* c,
                                                            int64_t ldc, int64_t c_step, int h,
                                                            const MicroEpilogue& ep) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  // As f32_gemm_avx2_rows: k in pairs, the next A panel prefetched once per pair.
  const int64_t a_next = kc * kMr * static_cast<int64_t>(sizeof(float));
  int64_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    prefetch_l2(a + k * kMr, a_next);
    f32_step<R, 2>(acc, a + k * kMr, b + b_rows[k], b_step);
    f32_step<R, 2>(acc, a + (k + 1) * kMr, b + b_rows[k + 1], b_step);
  }
  if (k < kc) f32_step<R, 2>(acc, a + k * kMr, b + b_rows[k], b_step);
  const __m256i lanes = first_lanes(h);
  const __m256i mask[2] = {lanes, lanes};
  if (h >= 8)
    store_tile<Lanes8, R, 2, true>(acc, c, ldc, mask, ep, c_step);
  else
    store_tile<Lanes8, R, 2, false>(acc, c, ldc, mask, ep, c_step);
}

// The column tail (gemm_ukernel.h): NJ columns of one B panel against NP A
// panels, the rows of a panel in the lanes of one vector (6 of 8). The
// micro-kernel spends a whole row panel's worth of broadcasts and multiply-adds
// per k on such a panel (f32_gemm_avx2_rows<6, 1>: 6 FMA chains, so 4 cycles
// of FMA latency per k), for 1 to 4 useful columns; here NP x NJ chains share
// the k loop: 1 cycle per panel and k for NJ = 1 against 4.
template <int NJ, int NP>
__attribute__((target("avx2,fma"))) void f32_column_tail_avx2(int64_t kc, const float* const* a, const float* b,
                                                              int64_t b_stride, float* tiles) {
  static_assert(NJ * NP + NP + 1 <= 16, "accumulators, A vectors and a broadcast fit the ymm registers");
  const __m256i rows = first_lanes(kMr);  // lanes 6 and 7 are not read (past the panel's last k)
  __m256 acc[NP][NJ];
#pragma GCC unroll 4
  for (int t = 0; t < NP; ++t)
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) acc[t][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m256 av[NP];
#pragma GCC unroll 4
    for (int t = 0; t < NP; ++t) av[t] = _mm256_maskload_ps(a[t] + k * kMr, rows);
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) {
      const __m256 bj = _mm256_broadcast_ss(b + k * b_stride + j);
#pragma GCC unroll 4
      for (int t = 0; t < NP; ++t) acc[t][j] = _mm256_fmadd_ps(bj, av[t], acc[t][j]);
    }
  }
  alignas(32) float lanes[8];
#pragma GCC unroll 4
  for (int t = 0; t < NP; ++t)
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) {
      _mm256_store_ps(lanes, acc[t][j]);
      for (int i = 0; i < kMr; ++i) tiles[(t * kMr + i) * 8 + j] = lanes[i];
    }
}

// Panels per pass for NJ columns: as many as the registers hold, up to 4.
constexpr int tail_panels(int nj) { return nj <= 2 ? 4 : nj == 3 ? 3 : 2; }

template <int NJ>
void column_tail_nj(int64_t kc, const float* const* a, int count, const float* b, int64_t b_stride, float* tiles) {
  constexpr int kNp = tail_panels(NJ);
  int t = 0;
  for (; t + kNp <= count; t += kNp) f32_column_tail_avx2<NJ, kNp>(kc, a + t, b, b_stride, tiles + t * kMr * 8);
  for (; t < count; ++t) f32_column_tail_avx2<NJ, 1>(kc, a + t, b, b_stride, tiles + t * kMr * 8);
}

void f32_column_tail(int64_t kc, const float* const* a, int count, const float* b, int64_t b_stride, int n_valid,
                     float* tiles) {
  switch (n_valid) {
    case 1: return column_tail_nj<1>(kc, a, count, b, b_stride, tiles);
    case 2: return column_tail_nj<2>(kc, a, count, b, b_stride, tiles);
    case 3: return column_tail_nj<3>(kc, a, count, b, b_stride, tiles);
    default: return column_tail_nj<4>(kc, a, count, b, b_stride, tiles);
  }
}

using RowsFn = void (*)(int64_t, const float*, const float*, int64_t, const int64_t*, float*, int64_t, int,
                        const MicroEpilogue&);

template <bool Rows, int... Rs>
constexpr std::array<RowsFn, 2 * sizeof...(Rs)> rows_table(std::integer_sequence<int, Rs...>) {
  return {f32_gemm_avx2_rows<Rs + 1, 1, Rows>..., f32_gemm_avx2_rows<Rs + 1, 2, Rows>...};
}

constexpr auto kRows = rows_table<false>(std::make_integer_sequence<int, kMr>{});
constexpr auto kRowsOffsets = rows_table<true>(std::make_integer_sequence<int, kMr>{});

// Dispatches a tile to the kernel for its valid rows (1..6) and vectors (1, 2).
void f32_gemm_avx2_6x16(int64_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc,
                        int m_valid, int n_valid, const MicroEpilogue& ep) {
  const int v = n_valid > 8 ? 1 : 0;
  kRows[static_cast<size_t>(v * kMr + std::clamp(m_valid, 1, kMr) - 1)](kc, a, b, b_stride, nullptr, c, ldc, n_valid,
                                                                         ep);
}
void f32_gemm_avx2_6x16_rows(int64_t kc, const float* a, const float* b, const int64_t* b_rows, float* c, int64_t ldc,
                             int m_valid, int n_valid, const MicroEpilogue& ep) {
  const int v = n_valid > 8 ? 1 : 0;
  kRowsOffsets[static_cast<size_t>(v * kMr + std::clamp(m_valid, 1, kMr) - 1)](kc, a, b, 0, b_rows, c, ldc, n_valid,
                                                                                ep);
}

using PairFn = void (*)(int64_t, const float*, const float*, const int64_t*, int64_t, float*, int64_t, int64_t, int,
                       const MicroEpilogue&);
template <int... Rs>
constexpr std::array<PairFn, sizeof...(Rs)> pair_table(std::integer_sequence<int, Rs...>) {
  return {f32_gemm_avx2_pair<Rs + 1>...};
}
constexpr auto kPairs = pair_table(std::make_integer_sequence<int, kMr>{});

void f32_gemm_avx2_6x16_rows_pair(int64_t kc, const float* a, const float* b, const int64_t* b_rows, int64_t b_step,
                                  float* c, int64_t ldc, int64_t c_step, int m_valid, int h, const MicroEpilogue& ep) {
  kPairs[static_cast<size_t>(std::clamp(m_valid, 1, kMr) - 1)](kc, a, b, b_rows, b_step, c, ldc, c_step, h, ep);
}

const GemmIsa kAvx2{"avx2", kMr, kNr, f32_gemm_avx2_6x16, f32_column_tail, 4, f32_gemm_avx2_6x16_rows,
                    f32_gemm_avx2_6x16_rows_pair, f32_gemm_avx2_6x16_run};

}  // namespace

const GemmIsa* const kGemmIsaAvx2 = &kAvx2;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const GemmIsa* const kGemmIsaAvx2 = nullptr;
}

#endif
