// Depthwise integer convolution (one input and one output channel per
// group): direct loops per channel plane. Each kernel tap adds
//   (x - x_zero_point) * (w - w_zero_point[c])
// to the int32 accumulators of the output line it reaches (taps in the
// padding add nothing, the padded input being x_zero_point), then the plane
// goes through the same output stage as the GEMM path (bias, requantization).
// The line loop is plain C++ compiled three times, for AVX-512, AVX2 and the
// baseline, and the CPU picks one (the compiler vectorises it).
// The line loops are meant to be vectorised; GCC's -O2 cost model ("very
// cheap") refuses loops whose trip count is not known, so this file asks for
// the dynamic model (as qgemm.cpp does).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "libquant/kernels/qconv_depthwise_blocked.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"
#include "libquant/kernels/cpu.h"

namespace quant::kernels::detail {
namespace {

// Adds (x - zx) * w of the taps k2 = 0..KW-1 of one input line to the output
// line a; tap k reads line[o * S + off[k]] for output o, weight wv[k], and
// shift[k] = -zx * wv[k]. uint32 arithmetic, so that a (huge-kernel) overflow
// wraps like the reference's int32 sum. One pass per line rather than per
// tap: the interior, where every tap is inside the line, is one vectorisable
// loop; the edges check each tap (taps in the padding add nothing).
template <class TX, int KW, int S>
__attribute__((always_inline)) inline void add_line(const TX* __restrict line, int64_t in_w, const uint32_t* wv,
                                                    const int64_t* off, const uint32_t* shift, int64_t out_w,
                                                    uint32_t* __restrict a) {
  int64_t lo = 0, hi = out_w;
  uint32_t shift_all = 0;
  for (int k = 0; k < KW; ++k) {
    const IndexRange r = valid_range(off[k], S, in_w, out_w);
    lo = std::max(lo, r.lo), hi = std::min(hi, r.hi);
    shift_all += shift[k];
  }
  if (hi < lo) hi = lo;
  auto edge = [&](int64_t o) {
    for (int k = 0; k < KW; ++k) {
      const int64_t i = o * S + off[k];
      if (i >= 0 && i < in_w) a[o] += static_cast<uint32_t>(static_cast<int32_t>(line[i])) * wv[k] + shift[k];
    }
  };
  for (int64_t o = 0; o < lo; ++o) edge(o);
  for (int64_t o = hi; o < out_w; ++o) edge(o);
  if constexpr (KW == 3) {
    const TX* __restrict l0 = line + off[0];
    const TX* __restrict l1 = line + off[1];
    const TX* __restrict l2 = line + off[2];
    const uint32_t w0 = wv[0], w1 = wv[1], w2 = wv[2];
    for (int64_t o = lo; o < hi; ++o)
      a[o] += shift_all + static_cast<uint32_t>(static_cast<int32_t>(l0[o * S])) * w0 +
              static_cast<uint32_t>(static_cast<int32_t>(l1[o * S])) * w1 +
              static_cast<uint32_t>(static_cast<int32_t>(l2[o * S])) * w2;
  } else {
    for (int64_t o = lo; o < hi; ++o) {
      uint32_t v = shift_all;
      for (int k = 0; k < KW; ++k) v += static_cast<uint32_t>(static_cast<int32_t>(line[o * S + off[k]])) * wv[k];
      a[o] += v;
    }
  }
}

// padded_plane's buffer: `fill` elements of zx (at least pad_size), then
// the input's rows at their padded places, as far as pad_size reaches.
template <class TX>
inline void pad_rows(const Spatial3& s, const TX* x, int32_t zx, int64_t pad_size, int64_t fill, TX* pad) {
  const int64_t ih = s.in[1], iw = s.in[2], pw = iw + s.pads_begin[2] + s.pads_end[2];
  std::fill(pad, pad + fill, static_cast<TX>(zx));
  for (int64_t y = 0; y < ih; ++y) {
    const int64_t at = (y + s.pads_begin[1]) * pw + s.pads_begin[2];
    if (at >= pad_size) break;  // rows below every output's reach
    std::copy(x + y * iw, x + y * iw + std::min(iw, pad_size - at), pad + at);
  }
}

// The common 2-D case (3x3 or 5x5 kernel, stride 1 or 2 in both dims, no
// dilation): the channel is first copied into a buffer padded with zx (so
// every tap is inside it and a padded tap adds (zx - zx) * w = 0), with
// output (oy, ox) at q = oy * pw + ox, reading the padded input at S * q +
// ky * pw + kx. One long loop over q then sums all KH*KW taps; the columns
// ox >= out_w are computed and dropped. Long loops vectorise where the
// per-line ones (7 to 112 outputs) mostly ran their scalar tails.
template <class TX, int K, int S>
__attribute__((always_inline)) inline void padded_plane(const Spatial3& s, const TX* x, int32_t zx, const int32_t* w,
                                                        TX* __restrict pad, uint32_t* __restrict wide,
                                                        uint32_t* __restrict acc) {
  const int64_t oh = s.out[1], ow = s.out[2];
  const int64_t pw = s.in[2] + s.pads_begin[2] + s.pads_end[2];
  const int64_t q_count = oh * pw;
  const int64_t pad_size = S * (q_count - 1) + (K - 1) * pw + K;
  pad_rows(s, x, zx, pad_size, pad_size, pad);
  uint32_t wv[K * K], c = 0;
  int64_t off[K * K];
  for (int t = 0; t < K * K; ++t) {
    wv[t] = static_cast<uint32_t>(w[t]);
    off[t] = (t / K) * pw + t % K;
    c -= static_cast<uint32_t>(zx) * wv[t];
  }
  for (int64_t q = 0; q < q_count; ++q) {
    uint32_t v = c;
#pragma GCC unroll 25
    for (int t = 0; t < K * K; ++t) v += static_cast<uint32_t>(static_cast<int32_t>(pad[S * q + off[t]])) * wv[t];
    wide[q] = v;
  }
  for (int64_t y = 0; y < oh; ++y) std::copy(wide + y * pw, wide + y * pw + ow, acc + y * ow);
}

// Scratch sizes of padded_plane (elements of the padded input and of the wide accumulators).
inline int64_t padded_input_size(const Spatial3& s) {
  const int64_t pw = s.in[2] + s.pads_begin[2] + s.pads_end[2];
  return s.strides[2] * (s.out[1] * pw - 1) + (s.kernel[2] - 1) * pw + s.kernel[2];
}

inline bool padded_path(const Spatial3& s) {
  const int64_t k = s.kernel[2];
  return s.in[0] == 1 && s.kernel[0] == 1 && s.kernel[1] == k && (k == 3 || k == 5) && s.strides[1] == s.strides[2] &&
         (s.strides[2] == 1 || s.strides[2] == 2) && s.dilations[1] == 1 && s.dilations[2] == 1 && s.out[1] >= 1 &&
         s.out[2] >= 1;
}

// One channel: acc[out_plane] = sum over taps of (x - zx) * w'.
template <class TX>
__attribute__((always_inline)) inline void depthwise_plane(const Spatial3& s, const TX* x, int32_t zx, const int32_t* w,
                                                           uint32_t* acc, TX* pad, uint32_t* wide) {
  if (padded_path(s)) {
    const bool s1 = s.strides[2] == 1;
    if (s.kernel[2] == 3 && s1) padded_plane<TX, 3, 1>(s, x, zx, w, pad, wide, acc);
    else if (s.kernel[2] == 3) padded_plane<TX, 3, 2>(s, x, zx, w, pad, wide, acc);
    else if (s1) padded_plane<TX, 5, 1>(s, x, zx, w, pad, wide, acc);
    else padded_plane<TX, 5, 2>(s, x, zx, w, pad, wide, acc);
    return;
  }
  const int64_t out_line = s.out[2], out_plane = s.out[0] * s.out[1] * s.out[2], kw = s.kernel[2];
  const bool fast = (kw == 3 || kw == 5) && (s.strides[2] == 1 || s.strides[2] == 2);
  std::fill(acc, acc + out_plane, 0);
  for (int64_t o0 = 0; o0 < s.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < s.out[1]; ++o1) {
      uint32_t* a = acc + (o0 * s.out[1] + o1) * out_line;
      for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0) {
        const int64_t i0 = o0 * s.strides[0] + k0 * s.dilations[0] - s.pads_begin[0];
        if (i0 < 0 || i0 >= s.in[0]) continue;
        for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1) {
          const int64_t i1 = o1 * s.strides[1] + k1 * s.dilations[1] - s.pads_begin[1];
          if (i1 < 0 || i1 >= s.in[1]) continue;
          const TX* line = x + (i0 * s.in[1] + i1) * s.in[2];
          const int32_t* wl = w + (k0 * s.kernel[1] + k1) * kw;
          if (fast) {
            uint32_t wv[5], shift[5];
            int64_t off[5];
            for (int64_t k2 = 0; k2 < kw; ++k2) {
              wv[k2] = static_cast<uint32_t>(wl[k2]);
              shift[k2] = 0u - static_cast<uint32_t>(zx) * wv[k2];
              off[k2] = k2 * s.dilations[2] - s.pads_begin[2];
            }
            const bool s1 = s.strides[2] == 1;
            if (kw == 3 && s1) add_line<TX, 3, 1>(line, s.in[2], wv, off, shift, out_line, a);
            else if (kw == 3) add_line<TX, 3, 2>(line, s.in[2], wv, off, shift, out_line, a);
            else if (s1) add_line<TX, 5, 1>(line, s.in[2], wv, off, shift, out_line, a);
            else add_line<TX, 5, 2>(line, s.in[2], wv, off, shift, out_line, a);
            continue;
          }
          for (int64_t k2 = 0; k2 < kw; ++k2) {
            const uint32_t wv = static_cast<uint32_t>(wl[k2]);
            const uint32_t shift = 0u - static_cast<uint32_t>(zx) * wv;
            const int64_t off = k2 * s.dilations[2] - s.pads_begin[2];
            const IndexRange r = valid_range(off, s.strides[2], s.in[2], out_line);
            for (int64_t o = r.lo; o < r.hi; ++o)
              a[o] += static_cast<uint32_t>(static_cast<int32_t>(line[o * s.strides[2] + off])) * wv + shift;
          }
        }
      }
    }
}

template <class TX>
void plane_default(const Spatial3& s, const TX* x, int32_t zx, const int32_t* w, uint32_t* acc, TX* pad,
                   uint32_t* wide) {
  depthwise_plane(s, x, zx, w, acc, pad, wide);
}

#if defined(__x86_64__) && defined(__GNUC__)
// Two int16 weights per 32-bit lane: lo times the even word, hi the odd one.
__attribute__((target("avx2"), always_inline)) inline __m256i weight_pair(int32_t lo, int32_t hi) {
  return _mm256_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) | (static_cast<uint32_t>(lo) & 0xffff)));
}
// 16 bytes as int16, as the reference widens TX.
template <class TX>
__attribute__((target("avx2"), always_inline)) inline __m256i widen16(__m128i v) {
  return std::is_signed_v<TX> ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}
template <class TX>
__attribute__((target("avx2"), always_inline)) inline __m128i load16(const TX* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

template <class TX>
__attribute__((target("avx2"))) void plane_avx2(const Spatial3& s, const TX* x, int32_t zx, const int32_t* w,
                                                uint32_t* acc, TX* pad, uint32_t* wide) {
  depthwise_plane(s, x, zx, w, acc, pad, wide);
}
template <class TX>
__attribute__((target("avx512f,avx512bw"))) void plane_avx512(const Spatial3& s, const TX* x, int32_t zx,
                                                              const int32_t* w, uint32_t* acc, TX* pad,
                                                              uint32_t* wide) {
  depthwise_plane(s, x, zx, w, acc, pad, wide);
}
#endif

// The padded plane with VPDPBUSD (AVX-512 VNNI + VBMI), for channels whose
// centered weights w' fit int8 (symmetric int8 weights: always). The padded
// input is kept as uint8 (int8 input flipped: x ^ 0x80 = x + 128, and its
// zero point alike, so x - zx is unchanged). For sixteen outputs q and one
// kernel row, lane i of a VPERMB of the 64 bytes at S * q + ky * pw gathers
// the four bytes under taps kx = 4g .. 4g+3 of output q + i (bytes S * i + 4g
// + j), and one VPDPBUSD adds their products with w'[ky][4g..4g+3] (a zero
// weight past the kernel's width): ceil(K / 4) of each per kernel row instead
// of K widening loads, multiplies and adds. The sum
//   sum_t x_t w'_t - zx sum_t w'_t  (= sum_t (x_t - zx) w'_t)
// wraps modulo 2^32 as the reference's int32 sum does (VPDPBUSD does not saturate).
// With a PlaneRequant the output stage runs on the register too and the
// plane leaves as bytes.
inline bool fits_int8(const int32_t* w, int64_t n) {
  for (int64_t t = 0; t < n; ++t)
    if (w[t] < -128 || w[t] > 127) return false;
  return true;
}

// Scratch sizes of vnni_plane: the padded input with the slack its last
// 64-byte loads read, and the wide accumulators rounded up to sixteen.
inline int64_t vnni_pad_size(const Spatial3& s) {
  const int64_t pw = s.in[2] + s.pads_begin[2] + s.pads_end[2], q_count = s.out[1] * pw;
  return s.strides[2] * (q_count + 16) + (s.kernel[2] - 1) * pw + 64;
}
inline int64_t vnni_wide_size(const Spatial3& s) {
  return (s.out[1] * (s.in[2] + s.pads_begin[2] + s.pads_end[2]) + 15) / 16 * 16;
}
// And of padded_plane_avx2: its last block of 8 reads up to 15 bytes
// past padded_plane's input, and writes up to 7 accumulators past the last
// row's output columns (so past the plane where that row's padding is
// narrower than 7).
inline int64_t avx2_pad_size(const Spatial3& s) { return padded_input_size(s) + 16; }
inline int64_t avx2_wide_size(const Spatial3& s) {
  return (s.out[1] * (s.in[2] + s.pads_begin[2] + s.pads_end[2]) + 7) / 8 * 8 + 8;
}

// The output stage fused into vnni_plane for uint8 / int8 outputs with
// requant_vector_ok Float requantization: per lane the operations of
// q_finish_avx512 (the same bits), the bias `add`, one channel's scale,
// clamp bounds less the zero point.
struct PlaneRequant {
  int32_t add = 0, zero_point = 0;
  float scale = 0, lo = 0, hi = 0;
};

// A plane kernel with the output stage optionally fused (vnni_plane,
// padded_plane_avx2): acc, or with a PlaneRequant the bytes at y.
template <class TX>
using FusedPlaneFn = void (*)(const Spatial3&, const TX*, int32_t, const int32_t*, uint8_t*, uint32_t*, uint32_t*,
                              const PlaneRequant*, uint8_t*);

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reports the _mm512_undefined_* pass-through operands of the unmasked
// AVX-512 intrinsics as maybe-uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// dst[i] = src[i] ^ flip for i < n, 64 bytes at a time, the last part under
// a mask: the lines here (7 to 112 bytes) are too short for memcpy's call to
// pay. Whole parts load and store plainly: a masked access costs several
// times a plain one on some CPUs (AMD Zen).
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void copy_line(uint8_t* dst, const uint8_t* src,
                                                                                 int64_t n, uint8_t flip) {
  const __m512i x = _mm512_set1_epi8(static_cast<char>(flip));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_loadu_si512(src + i), x));
  if (i < n) {
    const __mmask64 m = (__mmask64{1} << (n - i)) - 1;
    _mm512_mask_storeu_epi8(dst + i, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), x));
  }
}

// VPERMB indices of vnni_plane, built at compile time (built per call they
// cost a store-forwarding stall per plane): group g, lane i, byte j reads
// window byte S * i + 4g + j.
template <int S, int G>
struct WindowIndex {
  alignas(64) uint8_t bytes[G][64];
};
template <int S, int G>
constexpr WindowIndex<S, G> make_window_index() {
  WindowIndex<S, G> w{};
  for (int g = 0; g < G; ++g)
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 4; ++j) w.bytes[g][4 * i + j] = static_cast<uint8_t>(S * i + 4 * g + j);
  return w;
}
template <int S, int G>
inline constexpr WindowIndex<S, G> kWindowIndex = make_window_index<S, G>();

template <class TX, int K, int S>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi"))) void vnni_plane(
    const Spatial3& s, const TX* x, int32_t zx, const int32_t* w, uint8_t* pad, uint32_t* wide, uint32_t* acc,
    const PlaneRequant* rq, uint8_t* y) {
  constexpr int G = (K + 3) / 4;
  const int64_t ih = s.in[1], iw = s.in[2], oh = s.out[1], ow = s.out[2];
  const int64_t pw = iw + s.pads_begin[2] + s.pads_end[2], q_count = oh * pw;
  const int64_t pad_size = S * (q_count - 1) + (K - 1) * pw + K;
  const uint8_t flip = std::is_signed_v<TX> ? 0x80 : 0;
  const uint8_t zb = static_cast<uint8_t>(zx) ^ flip;
  std::memset(pad, zb, static_cast<size_t>(vnni_pad_size(s)));
  for (int64_t y = 0; y < ih; ++y) {
    const int64_t at = (y + s.pads_begin[1]) * pw + s.pads_begin[2];
    if (at >= pad_size) break;  // rows below every output's reach
    copy_line(pad + at, reinterpret_cast<const uint8_t*>(x + y * iw), std::min(iw, pad_size - at), flip);
  }
  int32_t wv[K][G];
  uint32_t c = 0;
  for (int ky = 0; ky < K; ++ky)
    for (int g = 0; g < G; ++g) {
      uint32_t word = 0;
      for (int j = 0; j < 4 && 4 * g + j < K; ++j) {
        const int32_t v = w[ky * K + 4 * g + j];
        word |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(v))) << (8 * j);
        c -= static_cast<uint32_t>(zb) * static_cast<uint32_t>(v);
      }
      wv[ky][g] = static_cast<int32_t>(word);
    }
  __m512i idx[G];
  for (int g = 0; g < G; ++g) idx[g] = _mm512_load_si512(kWindowIndex<S, G>.bytes[g]);
  const __m512i start = _mm512_set1_epi32(static_cast<int32_t>(c));
  // With rq: bytes (the requantized output) into wide, then lines of ow to y.
  uint8_t* wide8 = reinterpret_cast<uint8_t*>(wide);
  const __m512i add = _mm512_set1_epi32(rq ? rq->add : 0), zpv = _mm512_set1_epi32(rq ? rq->zero_point : 0);
  const __m512 scale = _mm512_set1_ps(rq ? rq->scale : 0), lo = _mm512_set1_ps(rq ? rq->lo : 0),
               hi = _mm512_set1_ps(rq ? rq->hi : 0);
  for (int64_t q = 0; q < q_count; q += 16) {
    __m512i a = start;
#pragma GCC unroll 5
    for (int ky = 0; ky < K; ++ky) {
      const __m512i v = _mm512_loadu_si512(pad + S * q + ky * pw);
#pragma GCC unroll 2
      for (int g = 0; g < G; ++g)
        a = _mm512_dpbusd_epi32(a, _mm512_permutexvar_epi8(idx[g], v), _mm512_set1_epi32(wv[ky][g]));
    }
    if (!rq) {
      _mm512_storeu_si512(wide + q, a);
      continue;
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a, add)), scale);
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(wide8 + q),
                     _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), zpv)));
  }
  if (rq) {
    // Rows in order, each as whole 64-byte stores while they stay inside the
    // plane (the bytes past a row are the next rows', written after it), the
    // plane's last bytes under a mask.
    uint8_t* const end = y + oh * ow;
    for (int64_t r = 0; r < oh; ++r) {
      uint8_t* d = y + r * ow;
      const uint8_t* src = wide8 + r * pw;
      int64_t i = 0;
      for (; i < ow && d + i + 64 <= end; i += 64) _mm512_storeu_si512(d + i, _mm512_loadu_si512(src + i));
      if (i < ow) copy_line(d + i, src + i, ow - i, 0);
    }
    return;
  }
  for (int64_t r = 0; r < oh; ++r) std::copy(wide + r * pw, wide + r * pw + ow, acc + r * ow);
}

#pragma GCC diagnostic pop

// The 3x3 and 5x5 padded planes (padded_plane's layout and sum) in AVX2, 8
// outputs q at a time with VPMADDWD: each multiply takes two taps' bytes,
// widened to int16, against their two weights (w' fits int16: |w - zero
// point| <= 255), where the compiler's loop spent a VPMULLD per tap and many
// widening shuffles. Stride 2: taps (ky, kx) and (ky, kx + 1) of output q are
// bytes 2q + kx and 2q + kx + 1 of row ky, already in pair order; an odd
// kernel's last column pairs with a zero weight. Stride 1: bytes q + kx,
// q + kx + 1 of a row are paired by a byte shuffle; the last column's taps
// pair across rows ((0, K-1) with (1, K-1), ...), the last row's with a zero
// weight. So 5 (3x3, stride 1) to 15 (5x5, stride 2) multiplies per 8
// outputs. Exact int32 products and sums, wrapping as the reference's. Every
// block is whole: the last one reads the padding's slack (avx2_pad_size) and
// writes wide's (avx2_wide_size). With a PlaneRequant the output stage runs
// on the register, q_finish_avx2's operations lane for lane, and the plane
// leaves as bytes (as vnni_plane). efficientnet_b0's int8 5x5 layers took
// 2.6-5.8x ONNX Runtime's time in the compiler's loop (its profiler against
// QTOOL_ISA=avx2 build/step_bench, AMD EPYC, 2026-12-03), 0.9-1.6x in this
// kernel (the blocks of dropped columns skipped, below).
template <class TX, int K, int S>
__attribute__((target("avx2"))) void padded_plane_avx2(const Spatial3& s, const TX* x, int32_t zx, const int32_t* w,
                                                       uint8_t* pad_bytes, uint32_t* wide, uint32_t* acc,
                                                       const PlaneRequant* rq, uint8_t* y) {
  static_assert((K == 3 || K == 5) && (S == 1 || S == 2));
  constexpr int kPairs = K / 2;  // pairs of columns per row; column K - 1 is left over
  TX* const pad = reinterpret_cast<TX*>(pad_bytes);
  const int64_t oh = s.out[1], ow = s.out[2];
  const int64_t pw = s.in[2] + s.pads_begin[2] + s.pads_end[2];
  const int64_t q_count = oh * pw;
  pad_rows(s, x, zx, padded_input_size(s), avx2_pad_size(s), pad);
  uint32_t c = 0;
  for (int t = 0; t < K * K; ++t) c -= static_cast<uint32_t>(zx) * static_cast<uint32_t>(w[t]);
  const __m256i start = _mm256_set1_epi32(static_cast<int32_t>(c));
  // pairs[ky][j]: taps (ky, 2j) and (ky, 2j + 1); last[ky]: (ky, K - 1) with
  // zero (stride 2); across[i]: (2i, K - 1) with (2i + 1, K - 1), the last
  // row's with zero (stride 1).
  __m256i pairs[K][kPairs], last[K], across[(K + 1) / 2];
  for (int ky = 0; ky < K; ++ky) {
    for (int j = 0; j < kPairs; ++j) pairs[ky][j] = weight_pair(w[ky * K + 2 * j], w[ky * K + 2 * j + 1]);
    last[ky] = weight_pair(w[ky * K + K - 1], 0);
  }
  for (int i = 0; i < (K + 1) / 2; ++i)
    across[i] = weight_pair(w[2 * i * K + K - 1], 2 * i + 1 < K ? w[(2 * i + 1) * K + K - 1] : 0);
  const __m128i neighbours = _mm_setr_epi8(0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8);
  uint8_t* wide8 = reinterpret_cast<uint8_t*>(wide);
  const __m256i add = _mm256_set1_epi32(rq ? rq->add : 0), zpv = _mm256_set1_epi32(rq ? rq->zero_point : 0);
  const __m256 scale = _mm256_set1_ps(rq ? rq->scale : 0), lo = _mm256_set1_ps(rq ? rq->lo : 0),
               hi = _mm256_set1_ps(rq ? rq->hi : 0);
  // Only the blocks that hold output columns (ox < ow): at stride 2 a padded
  // row is about twice the output row (efficientnet's 5x5/2 at 14 -> 7: 8
  // of 18 positions a row, where all were computed and most dropped).
  for (int64_t q = 0, row_end = ow; q < q_count; q = q + 8 < row_end ? q + 8 : (row_end += pw) - ow) {
    __m256i a = start;
    const TX* p = pad + S * q;
#pragma GCC unroll 5
    for (int ky = 0; ky < K; ++ky) {
      const TX* r = p + ky * pw;
#pragma GCC unroll 2
      for (int j = 0; j < kPairs; ++j) {
        __m128i v = load16<TX>(r + 2 * j);
        if constexpr (S == 1) v = _mm_shuffle_epi8(v, neighbours);
        a = _mm256_add_epi32(a, _mm256_madd_epi16(widen16<TX>(v), pairs[ky][j]));
      }
      if constexpr (S == 2) a = _mm256_add_epi32(a, _mm256_madd_epi16(widen16<TX>(load16<TX>(r + K - 1)), last[ky]));
    }
    if constexpr (S == 1) {
#pragma GCC unroll 3
      for (int i = 0; i < (K + 1) / 2; ++i) {
        const int ky = 2 * i, ky1 = 2 * i + 1 < K ? 2 * i + 1 : 2 * i;  // the last row pairs with itself (weight 0)
        const __m128i r0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + ky * pw + K - 1));
        const __m128i r1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + ky1 * pw + K - 1));
        a = _mm256_add_epi32(a, _mm256_madd_epi16(widen16<TX>(_mm_unpacklo_epi8(r0, r1)), across[i]));
      }
    }
  if (!rq) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(wide + q), a);
      continue;
    }
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, add)), scale);
    f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
    const __m256i v = _mm256_add_epi32(_mm256_cvtps_epi32(f), zpv);
    // Inside the output range: int16 exact, then each word's low byte.
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(wide8 + q),
                     _mm_shuffle_epi8(words, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1)));
  }
  for (int64_t r = 0; r < oh; ++r) {
    if (rq)
      std::copy(wide8 + r * pw, wide8 + r * pw + ow, y + r * ow);
    else
      std::copy(wide + r * pw, wide + r * pw + ow, acc + r * ow);
  }
}

// The AVX2 plane for this geometry (padded_path: 3x3 or 5x5), or null (no AVX2).
template <class TX>
FusedPlaneFn<TX> avx2_plane_fn(const Spatial3& s) {
  static const bool cpu = cpu_supports("avx2");
  if (!cpu || !padded_path(s)) return nullptr;
  const bool s1 = s.strides[2] == 1;
  if (s.kernel[2] == 3) return s1 ? padded_plane_avx2<TX, 3, 1> : padded_plane_avx2<TX, 3, 2>;
  return s1 ? padded_plane_avx2<TX, 5, 1> : padded_plane_avx2<TX, 5, 2>;
}

// The VNNI plane for this geometry (padded_path), or null when the CPU lacks
// VNNI / VBMI.
template <class TX>
FusedPlaneFn<TX> vnni_plane_fn(const Spatial3& s) {
  static const bool cpu = [] {
    return cpu_supports("avx512f") && cpu_supports("avx512bw") &&
           cpu_supports("avx512vl") && cpu_supports("avx512vnni") &&
           cpu_supports("avx512vbmi");
  }();
  if (!cpu || !padded_path(s)) return nullptr;
  const bool s1 = s.strides[2] == 1;
  if (s.kernel[2] == 3) return s1 ? vnni_plane<TX, 3, 1> : vnni_plane<TX, 3, 2>;
  return s1 ? vnni_plane<TX, 5, 1> : vnni_plane<TX, 5, 2>;
}
#else
template <class TX>
FusedPlaneFn<TX> vnni_plane_fn(const Spatial3&) {
  return nullptr;
}
template <class TX>
FusedPlaneFn<TX> avx2_plane_fn(const Spatial3&) {
  return nullptr;
}
#endif

template <class TX>
using PlaneFn = void (*)(const Spatial3&, const TX*, int32_t, const int32_t*, uint32_t*, TX*, uint32_t*);

template <class TX>
PlaneFn<TX> best_plane_fn() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_supports("avx512f") && cpu_supports("avx512bw")) return plane_avx512<TX>;
  if (cpu_supports("avx2")) return plane_avx2<TX>;
#endif
  return plane_default<TX>;
}

}  // namespace

template <class TX, class TY>
void qconv_depthwise(const ConvGeometry& g, const TX* x, TX x_zero_point, const PackedQConvWeights& packed,
                     const int32_t* bias, const Requantizer* requant, TY* y, int threads) {
  static const PlaneFn<TX> plane = best_plane_fn<TX>();
  const Spatial3 s = to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  const int64_t channels = g.out_channels, taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  QOutput o;
  o.row_add = bias;
  o.requant = requant;
  o.channel_is_row = true;
  o.vector_ok = requant_vector_ok(requant);
  o.type = std::is_same_v<TY, int32_t> ? QOutType::S32 : std::is_same_v<TY, uint8_t> ? QOutType::U8 : QOutType::S8;
  o.ldy = out_plane;
  const QFinish finish = packed.isa().finish;
  const bool fuse = !std::is_same_v<TY, int32_t> && o.vector_ok;
  const QFinishParams fp = fuse ? finish_params(o) : QFinishParams{};
  // The VNNI plane runs with the AVX-512 VNNI ISA only, so that the tests,
  // which run every ISA, check the other planes on this CPU too.
  const FusedPlaneFn<TX> vnni = &packed.isa() == kQGemmIsaAvx512Vnni ? vnni_plane_fn<TX>(s) : nullptr;
  // The AVX2 3x3 or 5x5 plane where plane_avx2 would run (the CPU's widest plane).
  const FusedPlaneFn<TX> avx2 = plane == plane_avx2<TX> ? avx2_plane_fn<TX>(s) : nullptr;
  const auto one_channel = [&](int64_t task) {
    thread_local std::vector<uint32_t> acc, wide;
    thread_local std::vector<TX> pad;
    thread_local std::vector<uint8_t> pad_u8;
    acc.resize(static_cast<size_t>(out_plane));
    const int64_t n = task / channels, ch = task % channels;
    const int32_t* w = packed.centered() + ch * taps;
    const TX* xc = x + (n * channels + ch) * in_plane;
    const bool use_vnni = vnni && fits_int8(w, taps);
    if (use_vnni || avx2) {
      pad_u8.resize(static_cast<size_t>(use_vnni ? vnni_pad_size(s) : avx2_pad_size(s) * int64_t{sizeof(TX)}));
      wide.resize(static_cast<size_t>(use_vnni ? vnni_wide_size(s) : avx2_wide_size(s)));
      const FusedPlaneFn<TX> fused = use_vnni ? vnni : avx2;
      if (fuse) {
        PlaneRequant rq;
        rq.add = bias ? bias[ch] : 0, rq.zero_point = fp.zero_point;
        rq.scale = requant->scale[fp.per_channel ? static_cast<size_t>(ch) : 0];
        rq.lo = static_cast<float>(fp.lo), rq.hi = static_cast<float>(fp.hi);
        fused(s, xc, x_zero_point, w, pad_u8.data(), wide.data(), nullptr, &rq,
              reinterpret_cast<uint8_t*>(y + (n * channels + ch) * out_plane));
        return;
      }
      fused(s, xc, x_zero_point, w, pad_u8.data(), wide.data(), acc.data(), nullptr, nullptr);
    } else {
      if (padded_path(s)) {
        pad.resize(static_cast<size_t>(padded_input_size(s)));
        wide.resize(static_cast<size_t>(s.out[1] * (s.in[2] + s.pads_begin[2] + s.pads_end[2])));
      }
      plane(s, xc, x_zero_point, w, acc.data(), pad.data(), wide.data());
    }
    QOutput ot = o;
    ot.y = y + n * channels * out_plane;
    finish(reinterpret_cast<const int32_t*>(acc.data()), out_plane, 1, out_plane, ch, 0, ot);
  };
  // Eight channels at once where the AVX2 plane would run fused and the
  // block kernel is faster (qconv_depthwise_blocked.h); the channels past
  // the last whole block go one by one.
  const bool blocked = avx2 && fuse && channels >= kQDepthwiseBlock &&
                       qdepthwise_block_fits(s.kernel[2], s.in[1], s.in[2], s.strides[2]);
  if (!blocked) return parallel_for(threads, g.batch * channels, one_channel);
  const int64_t blocks = channels / kQDepthwiseBlock, rest = channels - blocks * kQDepthwiseBlock;
  parallel_for(threads, g.batch * (blocks + rest), [&](int64_t task) {
    const int64_t n = task / (blocks + rest), k = task % (blocks + rest);
    if (k >= blocks) return one_channel(n * channels + blocks * kQDepthwiseBlock + (k - blocks));
    const int64_t c0 = k * kQDepthwiseBlock;
    QDepthwiseBlock b;
    b.kernel = s.kernel[2];
    b.in_h = s.in[1], b.in_w = s.in[2], b.out_h = s.out[1], b.out_w = s.out[2];
    b.stride_h = s.strides[1], b.stride_w = s.strides[2], b.pad_top = s.pads_begin[1], b.pad_left = s.pads_begin[2];
    b.x = x + (n * channels + c0) * in_plane, b.in_plane = in_plane;
    b.y = reinterpret_cast<uint8_t*>(y + (n * channels + c0) * out_plane), b.out_plane = out_plane;
    b.w = packed.centered() + c0 * taps, b.zx = x_zero_point;
    b.add = bias ? bias + c0 : nullptr;
    b.per_channel = fp.per_channel;
    b.scale = requant->scale.data() + (fp.per_channel ? c0 : 0);
    b.zero_point = fp.zero_point, b.lo = static_cast<float>(fp.lo), b.hi = static_cast<float>(fp.hi);
    qdepthwise_block_avx2<TX>(b);
  });
}

#define QT_INSTANTIATE_QCONV_DW(TX, TY)                                                                             \
  template void qconv_depthwise<TX, TY>(const ConvGeometry&, const TX*, TX, const PackedQConvWeights&, const int32_t*, \
                                        const Requantizer*, TY*, int);
QT_INSTANTIATE_QCONV_DW(uint8_t, uint8_t)
QT_INSTANTIATE_QCONV_DW(uint8_t, int8_t)
QT_INSTANTIATE_QCONV_DW(uint8_t, int32_t)
QT_INSTANTIATE_QCONV_DW(int8_t, uint8_t)
QT_INSTANTIATE_QCONV_DW(int8_t, int8_t)
QT_INSTANTIATE_QCONV_DW(int8_t, int32_t)
#undef QT_INSTANTIATE_QCONV_DW

}  // namespace quant::kernels::detail
