// The lanes path's AVX-512F kernels (conv_lanes.h). Compiled with target
// attributes, as gemm_ukernel_avx512.cpp is; called only when the GEMM ISA in
// force is AVX-512 (conv_fast.cpp decides).
//
// A tile is P <= 14 pixels of one output row x 32 channels in 2P zmm
// accumulators: per k two weight vectors, P broadcasts and 2P multiply-adds.
// The pixels of a row lie `stride` input columns apart, so one pointer and
// constant displacements reach them all (the AVX2 kernels hold a pointer per
// pixel, and 14 would not fit in the general registers). Rows of resnet18's
// maps split evenly: 56 = 4 x 14, 28 = 2 x 14, 14, 7. On resnet18's 3x3
// convs (one layer, 1 thread, 2026-12-01) a prototype of the loop reached
// 84% of the same host's register-only AVX-512 FMA peak where the direct
// path's GEMM reached 77%.
#include "libquant/kernels/conv_lanes.h"

#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_CONV_LANES_AVX512 1
#endif

namespace quant::kernels::detail {

#if defined(QTOOL_CONV_LANES_AVX512)
namespace {

constexpr int kMaxPixels = kMaxTilePixels;
constexpr int64_t kWidth = 32;

// maskz forms with every lane set throughout: the plain unpack, shuffle,
// max and min trip GCC 12's -Wuninitialized inside avx512fintrin.h.
constexpr __mmask16 kAll = 0xFFFF;

// r[0..15] transposed in place: r[j] lane i <- r[i] lane j.
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_maskz_unpacklo_ps(kAll, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[2 * i], r[2 * i + 1]);
  }
  // Within each 128-bit lane, rows 4b..4b+3: t[4b + 0..3] -> r[4b + 0..3]
  // holding columns 0, 1, 2, 3 of those rows (per lane).
#pragma GCC unroll 4
  for (int b = 0; b < 4; ++b) {
    r[4 * b] = _mm512_shuffle_ps(t[4 * b], t[4 * b + 2], 0x44);
    r[4 * b + 1] = _mm512_shuffle_ps(t[4 * b], t[4 * b + 2], 0xEE);
    r[4 * b + 2] = _mm512_shuffle_ps(t[4 * b + 1], t[4 * b + 3], 0x44);
    r[4 * b + 3] = _mm512_shuffle_ps(t[4 * b + 1], t[4 * b + 3], 0xEE);
  }
  // The 128-bit lanes: first pairs of row groups (0, 1) and (2, 3), then
  // the pairs' halves.
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    t[c] = _mm512_maskz_shuffle_f32x4(kAll, r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_maskz_shuffle_f32x4(kAll, r[c], r[4 + c], 0xDD);
    t[8 + c] = _mm512_maskz_shuffle_f32x4(kAll, r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_maskz_shuffle_f32x4(kAll, r[8 + c], r[12 + c], 0xDD);
  }
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
    r[c] = _mm512_maskz_shuffle_f32x4(kAll, t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_maskz_shuffle_f32x4(kAll, t[c], t[8 + c], 0xDD);
  }
}

// The sums of one depth block for P pixels S columns apart; with
// kAccumulate the earlier blocks' sums (partial) added after, as the GEMM
// epilogue adds C; with kLast the epilogue (bias, residual, clamp:
// MicroEpilogue's order) and the store into y, channel by channel, else
// the store into partial.
template <int P, int S, bool kAccumulate, bool kLast>
__attribute__((target("avx512f"))) void lanes_tile(int64_t kc, const LanesTile& t) {
  __m512 acc[P][2];
#pragma GCC unroll 14
  for (int i = 0; i < P; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const char* const first = reinterpret_cast<const char*>(t.x + t.pixel[0]);
  const float* w = t.w;
  const uintptr_t prefetch = t.prefetch;
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k, w += kWidth) {
    if (prefetch) {  // a panel row is two lines
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + static_cast<uintptr_t>(k) * 128), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + static_cast<uintptr_t>(k) * 128 + 64), _MM_HINT_T1);
    }
    const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16);
    const float* x = reinterpret_cast<const float*>(first + t.taps[k]);
#pragma GCC unroll 14
    for (int i = 0; i < P; ++i) {
      const __m512 a = _mm512_set1_ps(x[S * i]);
      acc[i][0] = _mm512_fmadd_ps(a, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, w1, acc[i][1]);
    }
  }
  if constexpr (kAccumulate) {
#pragma GCC unroll 14
    for (int i = 0; i < P; ++i) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(t.partial + kWidth * i));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(t.partial + kWidth * i + 16));
    }
  }
  if constexpr (!kLast) {
#pragma GCC unroll 14
    for (int i = 0; i < P; ++i) {
      _mm512_storeu_ps(t.partial + kWidth * i, acc[i][0]);
      _mm512_storeu_ps(t.partial + kWidth * i + 16, acc[i][1]);
    }
  } else {
    const __mmask16 pixels = static_cast<__mmask16>((1u << P) - 1);
    const __m512 vlo = _mm512_set1_ps(t.lo), vhi = _mm512_set1_ps(t.hi);
    const bool upper = t.clamp && t.hi != std::numeric_limits<float>::infinity();
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      __m512 r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) r[i] = i < P ? acc[i < P ? i : 0][v] : _mm512_setzero_ps();
      transpose16(r);  // r[j]: channel 16 v + j, pixels in lanes
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        const int64_t ch = 16 * v + j;
        __m512 o = r[j];
        if (t.bias) o = _mm512_add_ps(o, _mm512_set1_ps(t.bias[ch]));
        if (t.residual) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(pixels, t.residual + ch * t.ldy));
        // NaN passes the max (VMAXPS returns the second operand).
        if (t.clamp) {
          o = _mm512_maskz_max_ps(kAll, vlo, o);
          if (upper) o = _mm512_maskz_min_ps(kAll, vhi, o);
        }
        _mm512_mask_storeu_ps(t.y + ch * t.ldy, pixels, o);
      }
    }
  }
}

template <int P, int S>
LanesTileFn tile_fn(bool accumulate, bool last) {
  if (accumulate) return last ? lanes_tile<P, S, true, true> : lanes_tile<P, S, true, false>;
  return last ? lanes_tile<P, S, false, true> : lanes_tile<P, S, false, false>;
}
template <int S>
LanesTileFn tile_fn(int pixels, bool accumulate, bool last) {
  switch (pixels) {
    case 1: return tile_fn<1, S>(accumulate, last);
    case 2: return tile_fn<2, S>(accumulate, last);
    case 3: return tile_fn<3, S>(accumulate, last);
    case 4: return tile_fn<4, S>(accumulate, last);
    case 5: return tile_fn<5, S>(accumulate, last);
    case 6: return tile_fn<6, S>(accumulate, last);
    case 7: return tile_fn<7, S>(accumulate, last);
    case 8: return tile_fn<8, S>(accumulate, last);
    case 9: return tile_fn<9, S>(accumulate, last);
    case 10: return tile_fn<10, S>(accumulate, last);
    case 11: return tile_fn<11, S>(accumulate, last);
    case 12: return tile_fn<12, S>(accumulate, last);
    case 13: return tile_fn<13, S>(accumulate, last);
    default: return tile_fn<14, S>(accumulate, last);
  }
}
LanesTileFn tile_fn(int pixels, int64_t stride, bool accumulate, bool last) {
  return stride == 1 ? tile_fn<1>(pixels, accumulate, last) : tile_fn<2>(pixels, accumulate, last);
}

// Pointwise convs of mobilenet_v2, one layer alone, 1 thread, best of 200
// calls on an AVX-512 VNNI host (2026-12-01), lanes / GEMM: at 7 x 7 0.65-0.74
// (960 -> 320, 576 -> 160, 960 -> 160, 320 -> 1280, 160 -> 960), at 14 x 14
// 0.82-0.90 (384 -> 64, 64 -> 384, 576 -> 96, 96 -> 576), at 28 x 28 0.94
// and 1.00 (192 -> 32, 32 -> 192), at 112 x 112 1.17 (16 -> 96): maps up to
// 14 x 14.
const LanesIsa kAvx512{kWidth, kMaxPixels, true, 2, tile_fn, 196};

}  // namespace

const LanesIsa* const kLanesAvx512 = &kAvx512;

#else  // no AVX-512 kernels in this build

const LanesIsa* const kLanesAvx512 = nullptr;

#endif

}  // namespace quant::kernels::detail
