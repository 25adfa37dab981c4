// The lanes path's AVX2 + FMA kernels and their driver (conv_lanes.h).
// Compiled with target attributes, as gemm_ukernel_avx2.cpp is; called only
// when the GEMM ISA in force is AVX2 (conv_fast.cpp decides).
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

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
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

// r[0..7] transposed in place: r[j] lane i <- r[i] lane j.
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// One tile's operands and destinations, already moved to its pixels and
// channels.
struct Tile {
  const float* w;         // the panel of this depth block: kc x 16
  uintptr_t prefetch;     // the next panel the task reads (into L2, a line per k), or 0
  const float* x;         // padded input planes
  const int64_t* taps;    // this depth block's tap offsets (bytes)
  const int64_t* pixel;   // this tile's pixels' first taps (floats from x)
  float* partial;         // the sums of the depth blocks so far, pixel by pixel (16 floats each)
  float* y;               // y at (first channel, first pixel)
  int64_t ldy;            // floats between channels in y (and in residual)
  const float* bias;      // 16 values or null
  const float* residual;  // shaped as y or null
  bool clamp;
  float lo, hi;
};

// The sums of one depth block for P pixels; with kAccumulate the earlier
// blocks' sums (partial) added after, as the GEMM epilogue adds C; with
// kLast the epilogue (bias, residual, clamp: MicroEpilogue's order) and the
// store into y, channel by channel, else the store into partial.
template <int P, bool kAccumulate, bool kLast>
__attribute__((target("avx2,fma"))) void lanes_tile(int64_t kc, const Tile& t) {
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

using TileFn = void (*)(int64_t, const Tile&);
template <int P>
TileFn tile_fn(bool accumulate, bool last) {
  if (accumulate) return last ? lanes_tile<P, true, true> : lanes_tile<P, true, false>;
  return last ? lanes_tile<P, false, true> : lanes_tile<P, false, false>;
}
TileFn tile_fn(int pixels, bool accumulate, bool last) {
  switch (pixels) {
    case 1: return tile_fn<1>(accumulate, last);
    case 2: return tile_fn<2>(accumulate, last);
    case 3: return tile_fn<3>(accumulate, last);
    case 4: return tile_fn<4>(accumulate, last);
    case 5: return tile_fn<5>(accumulate, last);
    default: return tile_fn<6>(accumulate, last);
  }
}

// The map's pixels as tiles: sixes, and a remainder of 7 to 9 as two tiles
// of 4 or 5, 13 as 5 + 4 + 4 (a tile of P pixels runs 2P multiply-add
// chains, and below 8 chains the FMA latency, 4 cycles on two ports, idles
// the ports: 9 = 5 + 4 costs 9 pixels' time, 6 + 3 ten). Only maps of 7
// (4 + 3) or fewer than four pixels keep a short tile.
void split_pixels(int64_t n, std::vector<int>& sizes) {
  sizes.clear();
  for (int64_t r = n; r > 0;) {
    if (r <= kMaxPixels) {
      sizes.push_back(static_cast<int>(r));
      break;
    }
    if (r <= 9) {
      sizes.push_back(static_cast<int>(r) - 4);
      sizes.push_back(4);
      break;
    }
    if (r == 13) {  // 6 + 4 + 3 otherwise (a 7 x 7 map: 49 = 6 x 6 + 13)
      sizes.insert(sizes.end(), {5, 4, 4});
      break;
    }
    sizes.push_back(kMaxPixels);
    r -= kMaxPixels;
  }
}

}  // namespace

bool conv_lanes_available() { return true; }

PackedMatrix pack_conv_lanes(const float* w, int64_t m, int64_t depth) {
  // W^T as a GEMM B operand [depth, m]: element (k, j) = w[j * depth + k],
  // in the AVX2 kernels' 16-wide panels.
  return PackedMatrix::pack_b(MatrixView{w, 1, depth}, depth, m, *kGemmIsaAvx2);
}

void conv_lanes_f32(const LanesConv& c, int threads) {
  thread_local std::vector<int> sizes;
  thread_local std::vector<int64_t> starts;
  split_pixels(c.pixels, sizes);
  starts.assign(1, 0);
  for (int s : sizes) starts.push_back(starts.back() + s);
  const int64_t tiles = static_cast<int64_t>(sizes.size()), panels = c.m / kLanesWidth;
  const int* const tile_sizes = sizes.data();
  const int64_t* const tile_starts = starts.data();
  // Where K spans several depth blocks, each tile's sums wait between blocks
  // in a buffer of 16 floats per pixel and panel. The pixels go in chunks of
  // tiles whose buffer stays within half the L2 (all of resnet18's maps in
  // one chunk on a 2 MiB L2), so that a large map (64 channels at 1024 x
  // 1024: 256 MiB) needs no second copy of y's size.
  const int64_t chunk_tiles =
      std::max<int64_t>(1, l2_cache_bytes() / 2 / (c.m * kMaxPixels * static_cast<int64_t>(sizeof(float))));
  // Threads take runs of pixels where the weights are the smaller operand
  // (m x taps < pixels: early layers, large maps), each reading its own
  // band of the input, padded by itself (pad_planes' bands: the tasks run
  // run by run, each thread's share starting with its own); else runs of
  // panels of channels, each thread its own share of the weights, and runs
  // of pixels as well where there are fewer than two panels per thread.
  const bool by_pixels = threads > 1 && c.m * c.taps_per_channel < c.pixels;
  const int64_t groups = threads > 1 && !by_pixels ? std::min<int64_t>(panels, 2 * threads) : 1;
  const int64_t parts = std::clamp<int64_t>(by_pixels ? threads : (2 * threads + panels - 1) / panels, 1,
                                            std::max<int64_t>(tiles, 1));
  parallel_for(threads, groups * parts, [&](int64_t task) {
    thread_local AlignedFloats partial_buf;  // this thread's
    const int64_t group = task / parts, part = task % parts;
    const int64_t q0 = group * panels / groups, q1 = (group + 1) * panels / groups;
    const int64_t t_first = part * tiles / parts, t_last = (part + 1) * tiles / parts;
    Tile t{};
    t.x = c.x;
    t.ldy = c.pixels;
    t.clamp = c.clamp;
    t.lo = c.lo;
    t.hi = c.hi;
    for (int64_t t0 = t_first; t0 < t_last; t0 += chunk_tiles) {
      const int64_t t1 = std::min(t_last, t0 + chunk_tiles);
      const int64_t chunk_p0 = tile_starts[t0], chunk_pixels = tile_starts[t1] - chunk_p0;
      float* partial = nullptr;
      if (c.depth > kGemmKc) {
        const int64_t need = (q1 - q0) * chunk_pixels * kLanesWidth;
        if (partial_buf.size() < need) partial_buf = AlignedFloats(need);
        partial = partial_buf.data();
      }
      // Depth blocks outermost, panels within: the weights are read in the
      // order they lie (a depth block's panels one after the other), and a
      // depth block's input channels serve every panel while in cache.
      for (int64_t k0 = 0; k0 < c.depth; k0 += kGemmKc) {
        const int64_t kc = std::min(kGemmKc, c.depth - k0);
        const bool accumulate = k0 > 0, last = k0 + kc == c.depth;
        t.taps = c.taps + k0;
        for (int64_t q = q0; q < q1; ++q) {
          t.w = c.w->panel(k0, q);
          t.bias = c.bias ? c.bias + q * kLanesWidth : nullptr;
          // The weights come from memory in a whole model (resnet18's are 45
          // MB): the block's first tile fetches the next panel into L2.
          const float* next = q + 1 < q1 ? c.w->panel(k0, q + 1) : !last ? c.w->panel(k0 + kc, q0) : nullptr;
          for (int64_t ti = t0; ti < t1; ++ti) {
            t.prefetch = ti == t0 ? reinterpret_cast<uintptr_t>(next) : 0;
            const int64_t p0 = tile_starts[ti];
            t.pixel = c.pixel + p0;
            t.partial = partial ? partial + ((q - q0) * chunk_pixels + p0 - chunk_p0) * kLanesWidth : nullptr;
            t.y = c.y + q * kLanesWidth * c.pixels + p0;
            t.residual = c.residual ? c.residual + q * kLanesWidth * c.pixels + p0 : nullptr;
            tile_fn(tile_sizes[ti], accumulate, last)(kc, t);
          }
        }
      }
    }
  });
}

#else  // no AVX2 kernels in this build

bool conv_lanes_available() { return false; }
PackedMatrix pack_conv_lanes(const float*, int64_t, int64_t) { return {}; }
void conv_lanes_f32(const LanesConv&, int) {}

#endif

}  // namespace quant::kernels::detail
