// The int8 depthwise block kernel (qconv_depthwise_blocked.h). As the float
// one: the eight input planes are transposed into a scratch of pixels x 8
// channel bytes, padded with the zero point (a padded tap then adds
// (zx - zx) * w' = 0, as in the padded plane kernels), every output pixel is
// eight int32 lanes, one per channel, and the output bytes are transposed
// back into the eight planes. No per-plane packing of rows and no splitting
// of stride-2 rows: on mobilenet_v2's 14 x 14 and 7 x 7 maps and its
// stride-2 layers the plane kernels spent most of their time there, 1.4-3.2x
// ONNX Runtime's NHWC kernel under QTOOL_ISA=avx2.
//
// A tap is VPMOVZXBD / VPMOVSXBD of the pixel's eight bytes, then VPMADDWD
// against the tap's weights held as int16 in the low half of each int32
// lane (high half zero): lane = x * w' + x_high * 0, exact, one
// multiply-add uop where VPMULLD takes two. The int32 sum wraps as the
// reference's does; integer addition in any order gives the same sum.
#include "libquant/kernels/qconv_depthwise_blocked.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace quant::kernels::detail {

// Where the block kernel beat the AVX2 plane kernel: mobilenet_v2 int8
// (ort-x86), each depthwise layer's step in the fused plan, minimum of 40
// runs, QTOOL_ISA=avx2, alternating builds (stop 44), block / plane time:
// stride 2 at 112 x 112 0.67-0.69, 56 0.71, 28 0.58, 14 0.48; stride 1 at
// 28 0.83-0.94, 14 0.68-0.75, 7 0.52-0.53, but 56 0.96-0.98 and 112 1.0
// (the plane kernel's long lines vectorise well there).
// 5 x 5 (efficientnet_b0 int8, the same measure, stop 73): stride 2 at 14
// x 14 0.86-0.88, stride 1 at 7 x 7 0.86-0.89, but stride 1 at 14 1.0,
// at 28 1.09 and stride 2 at 56 1.12-1.14.
bool qdepthwise_block_fits(int64_t kernel, int64_t in_h, int64_t in_w, int64_t stride_w) {
  if (kernel == 5) return in_h * in_w <= (stride_w == 2 ? 14 * 14 : 7 * 7);
  if (stride_w == 2) return in_h * in_w <= 112 * 112;
  return in_w <= 28 && in_h * in_w <= 56 * 56;
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

constexpr int64_t kC = kQDepthwiseBlock;

// Rows r[0..7] (eight bytes each, in the low half) of an 8 x 8 byte matrix;
// out[k] gets column 2k in its low half and column 2k + 1 in its high half.
__attribute__((target("avx2"), always_inline)) inline void transpose8x8_bytes(const __m128i (&r)[8], __m128i (&out)[4]) {
  const __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpacklo_epi8(r[2], r[3]);
  const __m128i t2 = _mm_unpacklo_epi8(r[4], r[5]), t3 = _mm_unpacklo_epi8(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
  const __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
  out[0] = _mm_unpacklo_epi32(u0, u2);
  out[1] = _mm_unpackhi_epi32(u0, u2);
  out[2] = _mm_unpacklo_epi32(u1, u3);
  out[3] = _mm_unpackhi_epi32(u1, u3);
}

__attribute__((target("avx2"), always_inline)) inline void store_low(uint8_t* p, __m128i v) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v);
}
// MOVQ and MOVHPS, unaligned stores, as qgemm_ukernel_avx2.cpp's (GCC's
// _mm_storeh_pd is a plain double store, undefined at an odd address, which
// UBSan reports).
__attribute__((target("avx2"), always_inline)) inline void store_high(uint8_t* p, __m128i v) {
  _mm_storeh_pi(reinterpret_cast<__m64*>(p), _mm_castsi128_ps(v));
}
__attribute__((target("avx2"), always_inline)) inline __m128i load8(const uint8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

// The eight bytes at p as int32 lanes, widened as TX.
template <class TX>
__attribute__((target("avx2"), always_inline)) inline __m256i widen(const uint8_t* p) {
  if constexpr (std::is_signed_v<TX>) return _mm256_cvtepi8_epi32(load8(p));
  return _mm256_cvtepu8_epi32(load8(p));
}

// P consecutive output pixels of one output row from the scratch (`in`:
// the first one's tap (0, 0); `row`: bytes between scratch rows), requantized
// into P x 8 bytes at out. K x K taps.
template <class TX, int K, int P, int SW>
__attribute__((target("avx2"), always_inline)) inline void block_tile(const __m256i (&w)[K * K], __m256i start,
                                                                      const uint8_t* in, int64_t row, uint8_t* out,
                                                                      __m256i add, __m256 scale, __m256 lo, __m256 hi,
                                                                      __m256i zp) {
  __m256i acc[P];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) acc[j] = start;
  if constexpr (K == 3) {
#pragma GCC unroll 3
    for (int kh = 0; kh < K; ++kh)
#pragma GCC unroll 3
      for (int kw = 0; kw < K; ++kw)
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j)
          acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(widen<TX>(in + kh * row + kC * (SW * j + kw)), w[kh * K + kw]));
  } else {
    // 5 x 5: each scratch row's pixels widened once for the tile's P
    // outputs (SW (P - 1) + K of them) rather than once per tap (P K).
    constexpr int kSpan = SW * (P - 1) + K;
#pragma GCC unroll 5
    for (int kh = 0; kh < K; ++kh) {
      __m256i v[kSpan];
#pragma GCC unroll 16
      for (int n = 0; n < kSpan; ++n) v[n] = widen<TX>(in + kh * row + kC * n);
#pragma GCC unroll 5
      for (int kw = 0; kw < K; ++kw)
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(v[SW * j + kw], w[kh * K + kw]));
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
    // padded_plane_avx2's output stage, lane for lane.
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc[j], add)), scale);
    f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
    const __m256i v = _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
    // Inside the output range: int16 exact, then each word's low byte.
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    store_low(out + kC * j,
              _mm_shuffle_epi8(words, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1)));
  }
}

// Per-thread scratch of at least `bytes`.
uint8_t* block_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes) scratch.resize(bytes);
  return scratch.data();
}

template <class TX, int K, int SW>
__attribute__((target("avx2"))) void block_kernel(const QDepthwiseBlock& b) {
  // Pixels per tile: 4 accumulators, 9 weights (3 x 3; 5 x 5's 25 are
  // read from the stack) and the output stage's constants.
  constexpr int P = 4;
  constexpr int kTaps = K * K;
  const int64_t in_h = b.in_h, in_w = b.in_w, out_h = b.out_h, out_w = b.out_w, stride_h = b.stride_h;
  const int64_t pad_top = b.pad_top, pad_left = b.pad_left, in_plane = b.in_plane, out_plane = b.out_plane;
  const uint8_t* const x = static_cast<const uint8_t*>(b.x);
  uint8_t* const y = b.y;
  // The padded input, as the float block kernel's: output (oh, ow)'s tap
  // (kh, kw) is scratch pixel (oh * stride_h + kh, ow * SW + kw).
  const int64_t rows = std::max((out_h - 1) * stride_h + K, pad_top + in_h);
  const int64_t cols = std::max((out_w - 1) * SW + K, pad_left + in_w);
  const int64_t in_pixels = in_h * in_w, out_pixels = out_h * out_w;
  // Scratch: the input, the output bytes (with a run of 8 pixels' slack for
  // the last transpose), 8 x 8 bytes for the runs' tails.
  uint8_t* s = block_scratch(static_cast<size_t>(kC * (rows * cols + out_pixels + 8 + 8)));
  uint8_t* out = s + kC * rows * cols;
  uint8_t* tail = out + kC * (out_pixels + 8);
  const int zx_byte = static_cast<int>(static_cast<uint8_t>(b.zx));
  const auto fill = [&](uint8_t* from, int64_t pixels) { std::memset(from, zx_byte, static_cast<size_t>(kC * pixels)); };
  fill(s, pad_top * cols);
  for (int64_t r = pad_top; r < pad_top + in_h; ++r) {
    fill(s + kC * r * cols, pad_left);
    fill(s + kC * (r * cols + pad_left + in_w), cols - pad_left - in_w);
  }
  fill(s + kC * (pad_top + in_h) * cols, (rows - pad_top - in_h) * cols);
  // Input pixels in runs of eight across row ends, transposed.
  uint8_t* dst = s + kC * (pad_top * cols + pad_left);
  int64_t left_in_row = in_w;
  for (int64_t i = 0; i < in_pixels; i += 8) {
    const int64_t n = std::min<int64_t>(8, in_pixels - i);
    __m128i r[8], c[4];
    if (n == 8) {
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) r[ch] = load8(x + ch * in_plane + i);
    } else {
      for (int ch = 0; ch < 8; ++ch) std::memcpy(tail + 8 * ch, x + ch * in_plane + i, static_cast<size_t>(n));
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) r[ch] = load8(tail + 8 * ch);
    }
    transpose8x8_bytes(r, c);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if (j >= n) break;
      if (j % 2 == 0)
        store_low(dst, c[j / 2]);
      else
        store_high(dst, c[j / 2]);
      dst += kC;
      if (--left_in_row == 0) {
        left_in_row = in_w;
        dst += kC * (cols - in_w);
      }
    }
  }
  // Weights per tap as int16 in each lane's low half; the sum starts at
  // -zx * sum of w' (the padded plane kernels' start), per channel.
  __m256i w[kTaps];
  alignas(32) int32_t start_lanes[8];
  {
    alignas(32) int32_t taps[kTaps][8];
    for (int ch = 0; ch < 8; ++ch) {
      uint32_t c = 0;
      for (int t = 0; t < kTaps; ++t) {
        const int32_t wt = b.w[kTaps * ch + t];
        taps[t][ch] = static_cast<int32_t>(static_cast<uint32_t>(wt) & 0xFFFFu);
        c -= static_cast<uint32_t>(b.zx) * static_cast<uint32_t>(wt);
      }
      start_lanes[ch] = static_cast<int32_t>(c);
    }
    for (int t = 0; t < kTaps; ++t) w[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(taps[t]));
  }
  const __m256i start = _mm256_load_si256(reinterpret_cast<const __m256i*>(start_lanes));
  const __m256i add = b.add ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.add)) : _mm256_setzero_si256();
  const __m256 scale = b.per_channel ? _mm256_loadu_ps(b.scale) : _mm256_set1_ps(b.scale[0]);
  const __m256 lo = _mm256_set1_ps(b.lo), hi = _mm256_set1_ps(b.hi);
  const __m256i zp = _mm256_set1_epi32(b.zero_point);
  const int64_t row = kC * cols;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const uint8_t* in = s + oh * stride_h * row;
    uint8_t* o = out + kC * oh * out_w;
    int64_t ow = 0;
    for (; ow + P <= out_w; ow += P)
      block_tile<TX, K, P, SW>(w, start, in + kC * SW * ow, row, o + kC * ow, add, scale, lo, hi, zp);
    switch (out_w - ow) {
      case 3: block_tile<TX, K, 3, SW>(w, start, in + kC * SW * ow, row, o + kC * ow, add, scale, lo, hi, zp); break;
      case 2: block_tile<TX, K, 2, SW>(w, start, in + kC * SW * ow, row, o + kC * ow, add, scale, lo, hi, zp); break;
      case 1: block_tile<TX, K, 1, SW>(w, start, in + kC * SW * ow, row, o + kC * ow, add, scale, lo, hi, zp); break;
      default: break;
    }
  }
  // Output pixels in runs of eight, transposed back into the planes.
  for (int64_t i = 0; i < out_pixels; i += 8) {
    __m128i r[8], c[4];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) r[j] = load8(out + kC * (i + j));
    transpose8x8_bytes(r, c);
    const int64_t n = std::min<int64_t>(8, out_pixels - i);
    if (n == 8) {
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) {
        if (ch % 2 == 0)
          store_low(y + ch * out_plane + i, c[ch / 2]);
        else
          store_high(y + ch * out_plane + i, c[ch / 2]);
      }
    } else {
      alignas(16) uint8_t lanes[16];
      for (int ch = 0; ch < 8; ++ch) {
        _mm_store_si128(reinterpret_cast<__m128i*>(lanes), c[ch / 2]);
        std::memcpy(y + ch * out_plane + i, lanes + 8 * (ch % 2), static_cast<size_t>(n));
      }
    }
  }
}

}  // namespace

template <class TX>
void qdepthwise_block_avx2(const QDepthwiseBlock& b) {
  if (b.kernel == 5) return b.stride_w == 1 ? block_kernel<TX, 5, 1>(b) : block_kernel<TX, 5, 2>(b);
  if (b.stride_w == 1) return block_kernel<TX, 3, 1>(b);
  block_kernel<TX, 3, 2>(b);
}

#else

template <class TX>
void qdepthwise_block_avx2(const QDepthwiseBlock&) {}

#endif

template void qdepthwise_block_avx2<uint8_t>(const QDepthwiseBlock&);
template void qdepthwise_block_avx2<int8_t>(const QDepthwiseBlock&);

}  // namespace quant::kernels::detail
