// Depthwise 3x3 plane kernels (conv_depthwise_3x3.h): AVX-512 (16 outputs per
// vector, masked loads for the last block) and AVX2 + FMA (8 outputs, the rest
// of a row through the border path). Both are compiled with target
// attributes and picked at run time, as the GEMM micro-kernels are.
#include "libquant/kernels/conv_depthwise_3x3.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {
namespace {

// The input rows under kernel rows 0..2 for output row oh (null: padding).
struct Rows {
  const float* r[3];
};

// Filled in place: a Rows returned by value and copied into an array was
// written as 8-byte and read back as 16-byte words, a store-forwarding stall
// per row in the AVX-512 tile loop.
void fill_rows(const Depthwise3x3Plane& p, int64_t oh, Rows& rows) {
  for (int64_t kh = 0; kh < 3; ++kh) {
    const int64_t ih = oh * p.stride_h + kh - p.pad_top;
    rows.r[kh] = ih >= 0 && ih < p.in_h ? p.x + ih * p.in_w : nullptr;
  }
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
    Rows rows;
    fill_rows(p, oh, rows);
    float* yrow = p.y + oh * p.out_w;
    for (int64_t ow = 0; ow < in.lo; ++ow) yrow[ow] = border_output(p, rows, ow);
    for (int64_t ow = interior(rows, yrow, in.lo, in.hi); ow < p.out_w; ++ow) yrow[ow] = border_output(p, rows, ow);
  }
}

// Lanes [lo, hi) of 16 (empty when hi <= lo).
__mmask16 lanes(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 16);
  hi = std::clamp<int64_t>(hi, lo, 16);
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

int64_t ceil_div_signed(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Which of the 16 outputs starting at column ow read a tap inside the input
// row, per kernel column kw, and (stride 2) which of the 34 input elements
// from the block's first tap the loads may touch. Shared by every row of a
// tile: they depend on the column only.
struct ColumnMasks {
  __mmask16 tap[3];
  __mmask16 a, b, a2, b2;  // stride 2: elements [0,16), [16,32), [2,18), [18,34)
  bool full;                // every mask has all 16 bits: no lane needs one
};

ColumnMasks column_masks(const Depthwise3x3Plane& p, int64_t ow, int64_t n) {
  ColumnMasks m;
  const int64_t first = ow * p.stride_w - p.pad_left;  // input column of lane 0, kw 0
  for (int kw = 0; kw < 3; ++kw) {
    // Lane l is inside when 0 <= first + kw + l * stride < in_w.
    const int64_t lo = ceil_div_signed(-(first + kw), p.stride_w);
    const int64_t hi = ceil_div_signed(p.in_w - (first + kw), p.stride_w);
    m.tap[kw] = lanes(std::max<int64_t>(lo, 0), std::min(hi, n));
  }
  // Elements e (input column first + e) inside the row and read by the n
  // outputs (e <= 2n).
  const int64_t e_lo = -first, e_hi = std::min(p.in_w - first, 2 * n + 1);
  m.a = lanes(e_lo, e_hi);
  m.b = lanes(e_lo - 16, e_hi - 16);
  m.a2 = lanes(e_lo - 2, e_hi - 2);
  m.b2 = lanes(e_lo - 18, e_hi - 18);
  m.full = (m.tap[0] & m.tap[1] & m.tap[2]) == 0xFFFF && (p.stride_w == 1 || (m.a & m.b & m.a2 & m.b2) == 0xFFFF);
  return m;
}

struct Avx512Consts {
  __m512 w[9];
  __m512 bias, lo, hi;
  __m512i even, odd;
};

template <bool FULL>
__attribute__((target("avx512f"))) inline __m512 load(__mmask16 mask, const float* a) {
  if constexpr (FULL) return _mm512_loadu_ps(a);
  return _mm512_maskz_loadu_ps(mask, a);
}

// The three taps of kernel row kh for the 16 outputs starting at column ow;
// lanes whose tap is outside the row hold zero, and no load touches memory
// outside the row. FULL: every lane's taps are inside (an interior vector),
// so the loads need no masks.
template <int SW, bool FULL>
__attribute__((target("avx512f"))) inline void load_taps(const Depthwise3x3Plane& p, const Avx512Consts& k,
                                                         const float* row, int64_t ow, const ColumnMasks& m,
                                                         __m512 x[3]) {
  const float* q = row + ow * SW - p.pad_left;
  if constexpr (SW == 1) {
    x[0] = load<FULL>(m.tap[0], q);
    x[1] = load<FULL>(m.tap[1], q + 1);
    x[2] = load<FULL>(m.tap[2], q + 2);
    return;
  }
  // Lane l reads q[2l + kw]: even and odd lanes of q[0..31] for kw 0 and 1,
  // even lanes of q[2..33] for kw 2.
  const __m512 a = load<FULL>(m.a, q);
  const __m512 b = load<FULL>(m.b, q + 16);
  const __m512 a2 = load<FULL>(m.a2, q + 2);
  const __m512 b2 = load<FULL>(m.b2, q + 18);
  x[0] = _mm512_permutex2var_ps(a, k.even, b);
  x[1] = _mm512_permutex2var_ps(a, k.odd, b);
  x[2] = _mm512_permutex2var_ps(a2, k.even, b2);
}

// Kernel rows 0..2 of the R rows of vector v into acc[r]: masked FMAs (a tap
// outside the input is skipped lane by lane), or, FULL, plain ones.
template <int R, int SW, bool FULL>
__attribute__((target("avx512f"))) inline void accumulate_vector(const Depthwise3x3Plane& p, const Avx512Consts& k,
                                                                 const __m512 w[9], const Rows* rows, int64_t ow,
                                                                 const ColumnMasks& m, __m512* acc) {
  const __mmask16 t0 = m.tap[0], t1 = m.tap[1], t2 = m.tap[2];
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float* row = rows[r].r[kh];
      if (!row) continue;
      __m512 x[3];
      load_taps<SW, FULL>(p, k, row, ow, m, x);
      if constexpr (FULL) {
        acc[r] = _mm512_fmadd_ps(w[kh * 3], x[0], acc[r]);
        acc[r] = _mm512_fmadd_ps(w[kh * 3 + 1], x[1], acc[r]);
        acc[r] = _mm512_fmadd_ps(w[kh * 3 + 2], x[2], acc[r]);
      } else {
        acc[r] = _mm512_mask3_fmadd_ps(w[kh * 3], x[0], acc[r], t0);
        acc[r] = _mm512_mask3_fmadd_ps(w[kh * 3 + 1], x[1], acc[r], t1);
        acc[r] = _mm512_mask3_fmadd_ps(w[kh * 3 + 2], x[2], acc[r], t2);
      }
    }
  }
}

// An R-row x V-vector tile of outputs: R * V independent accumulators, so
// that the FMA latency is hidden (one accumulator per 16 outputs leaves the
// core waiting on a nine-long dependency chain). A tap outside the input is
// skipped per lane (masked FMA, as the reference skips padding), so each
// output is bias, then its taps in (kh, kw) order: the same bits as the
// scalar border path of the AVX2 kernel. Vector v covers columns ow + 16 v
// with the masks m[v]. SW is the stride along the row (1 or 2), fixed at
// compile time so that no branch on it sits among the loads.
template <int R, int V, int SW>
__attribute__((target("avx512f"))) void tile(const Depthwise3x3Plane& p, const Avx512Consts& k, const Rows* rows,
                                             float* const* yrows, int64_t ow, const ColumnMasks* m,
                                             const __mmask16* store) {
  // Fully unrolled so that the accumulators stay in registers: rolled, GCC
  // kept acc[][] on the stack and every FMA went through a store and a load.
  // The nine weights in registers: GCC otherwise folds them into the FMAs
  // as memory operands, doubling the loads, and loads are what bind here
  // (nine unaligned, mostly line-splitting input loads per output vector).
  __m512 w[9];
#pragma GCC unroll 9
  for (int i = 0; i < 9; ++i) {
    w[i] = k.w[i];
    asm("" : "+v"(w[i]));
  }
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = k.bias;
  // Vector by vector, so that only its three tap masks are live (AVX-512
  // has seven mask registers; the twelve of a four-vector tile were reloaded
  // from memory for every load and FMA).
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    __m512 col[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) col[r] = acc[r][v];
    if (m[v].full)
      accumulate_vector<R, SW, true>(p, k, w, rows, ow + 16 * v, m[v], col);
    else
      accumulate_vector<R, SW, false>(p, k, w, rows, ow + 16 * v, m[v], col);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][v] = col[r];
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 a = acc[r][v];
      // max(lo, v), min(hi, v): the second operand (v) is returned for NaN.
      // maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized.
      if (p.clamp) a = _mm512_maskz_min_ps(0xFFFF, k.hi, _mm512_maskz_max_ps(0xFFFF, k.lo, a));
      _mm512_mask_storeu_ps(yrows[r] + ow + 16 * v, store[v], a);
    }
  }
}

using TileFn = void (*)(const Depthwise3x3Plane&, const Avx512Consts&, const Rows*, float* const*, int64_t,
                        const ColumnMasks*, const __mmask16*);

// Tiles of R rows and 1..4 vectors, stride SW.
template <int R, int SW>
constexpr TileFn kTiles[4] = {tile<R, 1, SW>, tile<R, 2, SW>, tile<R, 3, SW>, tile<R, 4, SW>};

constexpr int kMaxTileRows = 8, kMaxTileVectors = 4;

__attribute__((target("avx512f"))) void dwconv3x3_f32_avx512(const Depthwise3x3Plane& p) {
  Avx512Consts k;
  for (int i = 0; i < 9; ++i) k.w[i] = _mm512_set1_ps(p.w[i]);
  k.bias = _mm512_set1_ps(p.bias);
  k.lo = _mm512_set1_ps(p.lo);
  k.hi = _mm512_set1_ps(p.hi);
  k.even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  k.odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  // About eight accumulators in flight: up to four vectors along the row and
  // as many rows as make up the rest (narrow maps such as 14x14 and 7x7 fill
  // the tile with rows).
  const int64_t vectors = (p.out_w + 15) / 16;
  const int V = static_cast<int>(std::min<int64_t>(kMaxTileVectors, vectors));
  const int R = V >= 4 ? 2 : V >= 2 ? 4 : kMaxTileRows;
  const bool s1 = p.stride_w == 1;
  const TileFn* tiles8 = s1 ? kTiles<8, 1> : kTiles<8, 2>;
  const TileFn* tiles4 = s1 ? kTiles<4, 1> : kTiles<4, 2>;
  const TileFn* tiles2 = s1 ? kTiles<2, 1> : kTiles<2, 2>;
  const TileFn* tiles1 = s1 ? kTiles<1, 1> : kTiles<1, 2>;
  // The column masks depend on the row geometry only: worked out once for
  // the planes of a layer (recomputing them per plane, with their
  // divisions, cost as much as the arithmetic of a 7x7 plane).
  struct MaskCache {
    int64_t in_w = -1, out_w = -1, stride_w = -1, pad_left = -1;
    std::vector<ColumnMasks> m;
    std::vector<__mmask16> store;
  };
  thread_local MaskCache cache;
  if (cache.in_w != p.in_w || cache.out_w != p.out_w || cache.stride_w != p.stride_w || cache.pad_left != p.pad_left) {
    cache.m.resize(static_cast<size_t>(vectors));
    cache.store.resize(static_cast<size_t>(vectors));
    for (int64_t v = 0; v < vectors; ++v) {
      const int64_t n = std::min<int64_t>(16, p.out_w - 16 * v);
      cache.m[static_cast<size_t>(v)] = column_masks(p, 16 * v, n);
      cache.store[static_cast<size_t>(v)] = lanes(0, n);
    }
    cache.in_w = p.in_w;
    cache.out_w = p.out_w;
    cache.stride_w = p.stride_w;
    cache.pad_left = p.pad_left;
  }
  for (int64_t ow = 0; ow < p.out_w; ow += 16 * V) {
    const int nv = static_cast<int>(std::min<int64_t>(V, (p.out_w - ow + 15) / 16));
    const ColumnMasks* m = cache.m.data() + ow / 16;
    const __mmask16* store = cache.store.data() + ow / 16;
    for (int64_t oh0 = 0; oh0 < p.out_h; oh0 += R) {
      const int rows_here = static_cast<int>(std::min<int64_t>(R, p.out_h - oh0));
      Rows rows[kMaxTileRows];
      float* yrows[kMaxTileRows];
      for (int r = 0; r < rows_here; ++r) {
        fill_rows(p, oh0 + r, rows[r]);
        yrows[r] = p.y + (oh0 + r) * p.out_w;
      }
      // The widest tile that fits the rows left, then pairs and single rows.
      int r = 0;
      if (rows_here == 8) {
        tiles8[nv - 1](p, k, rows, yrows, ow, m, store);
        r = 8;
      } else if (rows_here >= 4) {
        tiles4[nv - 1](p, k, rows, yrows, ow, m, store);
        r = 4;
      }
      for (; r + 1 < rows_here; r += 2) tiles2[nv - 1](p, k, rows + r, yrows + r, ow, m, store);
      if (r < rows_here) tiles1[nv - 1](p, k, rows + r, yrows + r, ow, m, store);
    }
  }
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
