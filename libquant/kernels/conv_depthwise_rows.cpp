// Depthwise convolution of a 2-D plane on vectors (conv_depthwise_rows.h).
//
// AVX-512: 16 outputs of a row per vector accumulate every tap in a
// register, masked loads reading zeros where a tap falls in the left or
// right padding. AVX2 has no cheap masked loads (VMASKMOVPS), so the plane
// is first copied into rows padded with zeros on both sides; then tiles of
// up to four vectors of 8 outputs (up to four in a row, or one or two
// vectors in each of two or four rows where rows are short: efficientnet's
// 5x5 layers at 14 x 14 and 7 x 7) keep four multiply-add chains going.
// Before it, AVX2 ran such planes tap by tap into the output row, a vector
// and a scalar tail of 6 per tap at 14 x 14: 1.55 ms for the 672 channels
// of efficientnet_b0's 5x5 layer at 14 x 14 (build/step_bench,
// QTOOL_ISA=avx2, AMD EPYC, 2026-12-03).
#include "libquant/kernels/conv_depthwise_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_DEPTHWISE_ROWS_X86 1
#endif

namespace quant::kernels::detail {
namespace {

constexpr int64_t kMaxKernelHeight = 16;

// Kernel rows [lo, hi) of output row oh that land inside the input.
struct RowRange {
  int64_t lo, hi;
};
RowRange valid_rows(const DepthwisePlane& p, int64_t oh) {
  const int64_t top = oh * p.stride_h - p.pad_top;  // input row of kernel row 0
  int64_t lo = 0, hi = p.kernel_h;
  while (lo < hi && top + lo * p.dilation_h < 0) ++lo;
  while (hi > lo && top + (hi - 1) * p.dilation_h >= p.in_h) --hi;
  return {lo, hi};
}

#if defined(QTOOL_DEPTHWISE_ROWS_X86)
__attribute__((target("avx512f,bmi2"))) void plane_avx512(const DepthwisePlane& p) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const int shift = p.stride_w == 2 ? 1 : 0;
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const RowRange rows = valid_rows(p, oh);
    float* yrow = p.y + oh * p.out_w;
    for (int64_t ow0 = 0; ow0 < p.out_w; ow0 += 16) {
      const int64_t lanes = std::min<int64_t>(16, p.out_w - ow0);
      __m512 acc = _mm512_set1_ps(p.bias);
      for (int64_t kh = rows.lo; kh < rows.hi; ++kh) {
        const float* xrow = p.x + (oh * p.stride_h + kh * p.dilation_h - p.pad_top) * p.in_w;
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          // Lane l reads x[(ow0 + l) * stride + off]; valid for 0 <= that < in_w.
          const int64_t first = ow0 * p.stride_w + kw * p.dilation_w - p.pad_left;
          // Lanes [lo, hi) land inside the row (shifts: stride is 1 or 2).
          const int64_t lo = first >= 0 ? 0 : (-first + p.stride_w - 1) >> shift;
          const int64_t last = p.in_w - 1 - first;  // largest admissible l * stride
          const int64_t hi = last < 0 ? 0 : std::min(lanes, (last >> shift) + 1);
          if (hi <= lo) continue;
          const uint32_t mask = ((1u << hi) - 1u) & ~((1u << lo) - 1u);
          __m512 xv;
          if (p.stride_w == 1) {
            xv = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), xrow + first);
          } else {
            const __m512 a = _mm512_maskz_loadu_ps(static_cast<__mmask16>(_pdep_u32(mask & 0xFF, 0x5555)), xrow + first);
            const __m512 b =
                _mm512_maskz_loadu_ps(static_cast<__mmask16>(_pdep_u32(mask >> 8, 0x5555)), xrow + first + 16);
            xv = _mm512_permutex2var_ps(a, even, b);
          }
          acc = _mm512_fmadd_ps(_mm512_set1_ps(p.w[kh * p.kernel_w + kw]), xv, acc);
        }
      }
      // VMAXPS / VMINPS return their second operand where one is NaN: NaN passes.
      if (p.clamp)
        acc = _mm512_maskz_min_ps(0xFFFF, _mm512_set1_ps(p.hi), _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(p.lo), acc));
      _mm512_mask_storeu_ps(yrow + ow0, static_cast<__mmask16>((1u << lanes) - 1u), acc);
    }
  }
}

// The padded copy: row ih of x at pad + ih * width + pad_left, zeros around.
struct Padded {
  const float* data;
  int64_t width;
};

// Eight outputs from padded row `row` at column c: c, c + 1, ... (stride 1)
// or c, c + 2, ... (stride 2: the even lanes of two loads, put in order).
template <int S>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline __m256 load8(const float* row, int64_t c) {
  if constexpr (S == 1) {
    return _mm256_loadu_ps(row + c);
  } else {
    const __m256 lo = _mm256_loadu_ps(row + c), hi = _mm256_loadu_ps(row + c + 8);
    const __m256 even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
  }
}

// R output rows from oh, V vectors of 8 from column ow0 in each.
template <int S, int R, int V>
__attribute__((target("avx2,fma"))) void tile_avx2(const DepthwisePlane& p, const Padded& pad, int64_t oh,
                                                   int64_t ow0) {
  __m256 acc[R][V];
  RowRange rows[R];
  int64_t kh_lo = p.kernel_h, kh_hi = 0;
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    rows[r] = valid_rows(p, oh + r);
    kh_lo = std::min(kh_lo, rows[r].lo), kh_hi = std::max(kh_hi, rows[r].hi);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_set1_ps(p.bias);
  }
  for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
    const float* src[R];
    bool in[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      in[r] = kh >= rows[r].lo && kh < rows[r].hi;
      const int64_t ih = (oh + r) * p.stride_h + kh * p.dilation_h - p.pad_top;
      src[r] = in[r] ? pad.data + ih * pad.width + ow0 * S : nullptr;
    }
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const __m256 wv = _mm256_set1_ps(p.w[kh * p.kernel_w + kw]);
      const int64_t c = kw * p.dilation_w;
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        if (!in[r]) continue;
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(wv, load8<S>(src[r], c + 8 * S * v), acc[r][v]);
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float* yrow = p.y + (oh + r) * p.out_w + ow0;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m256 o = acc[r][v];
      if (p.clamp) o = _mm256_min_ps(hi, _mm256_max_ps(lo, o));  // NaN passes (second operand)
      const int64_t n = std::min<int64_t>(8, p.out_w - ow0 - 8 * v);
      if (n == 8) {
        _mm256_storeu_ps(yrow + 8 * v, o);
      } else {
        // A partial vector: no masked store (slow on AMD's AVX2 cores).
        alignas(32) float part[8];
        _mm256_store_ps(part, o);
        std::memcpy(yrow + 8 * v, part, static_cast<size_t>(n) * sizeof(float));
      }
    }
  }
}

template <int S>
void plane_avx2_stride(const DepthwisePlane& p, const Padded& pad) {
  const int64_t vectors = (p.out_w + 7) / 8;
  if (vectors >= 4) {
    // Rows of 32 outputs and more: four vectors of a row at a time.
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      int64_t v = 0;
      for (; v + 4 <= vectors; v += 4) tile_avx2<S, 1, 4>(p, pad, oh, 8 * v);
      switch (vectors - v) {
        case 3: tile_avx2<S, 1, 3>(p, pad, oh, 8 * v); break;
        case 2: tile_avx2<S, 1, 2>(p, pad, oh, 8 * v); break;
        case 1: tile_avx2<S, 1, 1>(p, pad, oh, 8 * v); break;
        default: break;
      }
    }
    return;
  }
  // Short rows: several rows a tile, about four vectors in all.
  int64_t oh = 0;
  switch (vectors) {
    case 3:
      for (; oh < p.out_h; ++oh) tile_avx2<S, 1, 3>(p, pad, oh, 0);
      break;
    case 2:
      for (; oh + 2 <= p.out_h; oh += 2) tile_avx2<S, 2, 2>(p, pad, oh, 0);
      for (; oh < p.out_h; ++oh) tile_avx2<S, 1, 2>(p, pad, oh, 0);
      break;
    default:
      for (; oh + 4 <= p.out_h; oh += 4) tile_avx2<S, 4, 1>(p, pad, oh, 0);
      for (; oh < p.out_h; ++oh) tile_avx2<S, 1, 1>(p, pad, oh, 0);
      break;
  }
}

void plane_avx2(const DepthwisePlane& p) {
  // Reads reach column (8 * vectors - 8) * stride + (kernel_w - 1) *
  // dilation + 7 (stride 1) or + 15 (stride 2: two loads of 8) in padded
  // coordinates.
  const int64_t vectors = (p.out_w + 7) / 8;
  const int64_t reach = (8 * vectors - 8) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + (p.stride_w == 2 ? 16 : 8);
  const int64_t width = std::max(p.pad_left + p.in_w, reach);
  thread_local std::vector<float> scratch;  // this thread's; grows, never shrinks
  if (scratch.size() < static_cast<size_t>(p.in_h * width)) scratch.resize(static_cast<size_t>(p.in_h * width));
  for (int64_t ih = 0; ih < p.in_h; ++ih) {
    float* row = scratch.data() + ih * width;
    std::fill(row, row + p.pad_left, 0.0f);
    std::memcpy(row + p.pad_left, p.x + ih * p.in_w, static_cast<size_t>(p.in_w) * sizeof(float));
    std::fill(row + p.pad_left + p.in_w, row + width, 0.0f);
  }
  const Padded pad{scratch.data(), width};
  if (p.stride_w == 1) plane_avx2_stride<1>(p, pad);
  else plane_avx2_stride<2>(p, pad);
}
#endif

}  // namespace

bool depthwise_plane_fits(const DepthwisePlane& p) {
  return p.kernel_h >= 1 && p.kernel_h <= kMaxKernelHeight && p.kernel_w >= 1 && (p.stride_w == 1 || p.stride_w == 2) &&
         p.stride_h >= 1 && p.dilation_h >= 1 && p.dilation_w >= 1 && p.pad_top >= 0 && p.pad_left >= 0 &&
         p.out_h >= 0 && p.out_w >= 0;
}

IsaCap depthwise_plane_level() {
  if (cpu_supports("avx512f") && cpu_supports("bmi2")) return IsaCap::Avx512;
  if (cpu_supports("avx2") && cpu_supports("fma")) return IsaCap::Avx2;
  return IsaCap::Portable;
}

bool depthwise_plane(IsaCap level, const DepthwisePlane& p) {
  if (!depthwise_plane_fits(p)) return false;
#if defined(QTOOL_DEPTHWISE_ROWS_X86)
  if (level == IsaCap::Avx512 && cpu_supports("avx512f") && cpu_supports("bmi2")) {
    plane_avx512(p);
    return true;
  }
  if (level == IsaCap::Avx2 && cpu_supports("avx2") && cpu_supports("fma")) {
    plane_avx2(p);
    return true;
  }
#endif
  (void)level;
  return false;
}

}  // namespace quant::kernels::detail
