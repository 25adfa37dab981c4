// The lanes path's AVX2 + FMA kernels (conv_lanes.h). Compiled with target
// attributes, as gemm_ukernel_avx2.cpp is; called only when the GEMM ISA in
// force is AVX2 (conv_fast.cpp decides).
//
// A tile is P <= 6 pixels x 16 channels in 2P accumulators: per k two
// weight vectors, P broadcasts of the pixels' inputs and 2P multiply-adds,
// the shape of the 6 x 16 GEMM tile with the operands' roles swapped. Each
// pixel's pointer sits in its own register and tap k's byte offset is added
// in the load's address, so a k costs one offset load besides the
// operands: with the offset added to each pixel in a separate instruction
// (the compiler's choice when the pointers are not held apart) the loop ran
// 6 integer operations more per k and reached 77-81% of the FMA peak,
// against 86-94% so, the k loop unrolled by 4 (3x3 convs of resnet18's
// shapes, one thread, a harness, 2026-11-30).
#include "libquant/kernels/conv_lanes.h"

#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "libquant/kernels/transpose_avx2.h"
#define QTOOL_CONV_LANES 1
#endif

namespace quant::kernels::detail {

#if defined(QTOOL_CONV_LANES)
namespace {

constexpr int kMaxPixels = 6;

// The first n (0-4) floats at p in the low lanes, the others zero; and back.
// Pairs go through the unaligned 64-bit moves (_mm_loadu_si64): a float
// pointer need not be 8-byte aligned, as _mm_load_sd's double would be
// (UBSan refuses it).
template <int N>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline __m128 load_part(const float* p) {
  static_assert(N >= 0 && N <= 4);
  if constexpr (N == 0)
    return _mm_setzero_ps();
  else if constexpr (N == 1)
    return _mm_load_ss(p);
  else if constexpr (N == 2)
    return _mm_castsi128_ps(_mm_loadu_si64(p));
  else if constexpr (N == 3)
    return _mm_movelh_ps(_mm_castsi128_ps(_mm_loadu_si64(p)), _mm_load_ss(p + 2));
  else
    return _mm_loadu_ps(p);
}
template <int N>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void store_part(float* p, __m128 v) {
  static_assert(N >= 0 && N <= 4);
  if constexpr (N == 1) {
    _mm_store_ss(p, v);
  } else if constexpr (N == 2) {
    _mm_storeu_si64(p, _mm_castps_si128(v));
  } else if constexpr (N == 3) {
    _mm_storeu_si64(p, _mm_castps_si128(v));
    _mm_store_ss(p + 2, _mm_movehl_ps(v, v));
  } else if constexpr (N == 4) {
    _mm_storeu_ps(p, v);
  }
}
// P (<= 8) consecutive floats: plain moves, no masks (masked stores are slow
// on AMD's AVX2 cores).
template <int P>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline __m256 load_first(const float* p) {
  return _mm256_set_m128(load_part<(P > 4 ? P - 4 : 0)>(p + 4), load_part<(P < 4 ? P : 4)>(p));
}
template <int P>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void store_first(float* p, __m256 v) {
  store_part<(P < 4 ? P : 4)>(p, _mm256_castps256_ps128(v));
  if constexpr (P > 4) store_part<P - 4>(p + 4, _mm256_extractf128_ps(v, 1));
}

// The sums of one depth block for P pixels; with kAccumulate the earlier
// blocks' sums (partial) added after, as the GEMM epilogue adds C; with
// kLast the epilogue (bias, residual, clamp: MicroEpilogue's order) and the
// store into y, channel by channel, else the store into partial.
template <int P, bool kAccumulate, bool kLast>
__attribute__((target("avx2,fma"))) void lanes_tile(int64_t kc, const LanesTile& t) {
  __m256 acc[P][2];
#pragma GCC unroll 6
  for (int i = 0; i < P; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const char* xi[P];
#pragma GCC unroll 6
  for (int i = 0; i < P; ++i) {
    xi[i] = reinterpret_cast<const char*>(t.x + t.pixel[i]);
    asm("" : "+r"(xi[i]));  // one register per pixel (see the file's comment)
  }
  const float* w = t.w;
  const uintptr_t prefetch = t.prefetch;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k, w += 16) {
    if (prefetch) _mm_prefetch(reinterpret_cast<const char*>(prefetch + static_cast<uintptr_t>(k) * 64), _MM_HINT_T1);
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
    const int64_t tap = t.taps[k];
#pragma GCC unroll 6
    for (int i = 0; i < P; ++i) {
      const __m256 a = _mm256_broadcast_ss(reinterpret_cast<const float*>(xi[i] + tap));
      acc[i][0] = _mm256_fmadd_ps(a, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, w1, acc[i][1]);
    }
  }
  if constexpr (kAccumulate) {
#pragma GCC unroll 6
    for (int i = 0; i < P; ++i) {
      acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(t.partial + 16 * i));
      acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(t.partial + 16 * i + 8));
    }
  }
  if constexpr (!kLast) {
#pragma GCC unroll 6
    for (int i = 0; i < P; ++i) {
      _mm256_storeu_ps(t.partial + 16 * i, acc[i][0]);
      _mm256_storeu_ps(t.partial + 16 * i + 8, acc[i][1]);
    }
  } else {
    const __m256 vlo = _mm256_set1_ps(t.lo), vhi = _mm256_set1_ps(t.hi);
    const bool upper = t.clamp && t.hi != std::numeric_limits<float>::infinity();
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = i < P ? acc[i < P ? i : 0][v] : _mm256_setzero_ps();
      transpose8(r);  // r[j]: channel 8 v + j, pixels in lanes
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int64_t ch = 8 * v + j;
        __m256 o = r[j];
        if (t.bias) o = _mm256_add_ps(o, _mm256_set1_ps(t.bias[ch]));
        if (t.residual) o = _mm256_add_ps(o, load_first<P>(t.residual + ch * t.ldy));
        if (t.clamp) {
          o = _mm256_max_ps(vlo, o);  // NaN passes (VMAXPS returns the second operand)
          if (upper) o = _mm256_min_ps(vhi, o);
        }
        store_first<P>(t.y + ch * t.ldy, o);
      }
    }
  }
}

template <int P>
LanesTileFn tile_fn(bool accumulate, bool last) {
  if (accumulate) return last ? lanes_tile<P, true, true> : lanes_tile<P, true, false>;
  return last ? lanes_tile<P, false, true> : lanes_tile<P, false, false>;
}
LanesTileFn tile_fn(int pixels, int64_t /*stride: the pixel table has it*/, bool accumulate, bool last) {
  switch (pixels) {
    case 1: return tile_fn<1>(accumulate, last);
    case 2: return tile_fn<2>(accumulate, last);
    case 3: return tile_fn<3>(accumulate, last);
    case 4: return tile_fn<4>(accumulate, last);
    case 5: return tile_fn<5>(accumulate, last);
    default: return tile_fn<6>(accumulate, last);
  }
}

// Pointwise convs of mobilenet_v2, one layer alone, 1 thread, best of 200
// calls on an AVX-512 VNNI host through QTOOL_ISA=avx2 (2026-12-01), lanes /
// GEMM: at 7 x 7, 960 -> 320 0.85, 576 -> 160 0.85, 320 -> 1280 0.87, 160 ->
// 960 0.92; at 14 x 14 the projections 0.94-0.96 but the expansions 1.06-1.09
// (64 -> 384, 96 -> 576), at 28 x 28 32 -> 192 1.26: maps up to 8 x 8.
const LanesIsa kAvx2{16, kMaxPixels, false, 0, tile_fn, 64};

}  // namespace

const LanesIsa* const kLanesAvx2 = &kAvx2;

#else  // no AVX2 kernels in this build

const LanesIsa* const kLanesAvx2 = nullptr;

#endif

}  // namespace quant::kernels::detail
