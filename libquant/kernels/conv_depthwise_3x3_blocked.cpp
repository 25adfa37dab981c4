// Depthwise 3x3 block kernel (conv_depthwise_3x3.h): eight channels at once,
// one channel per vector lane, as ONNX Runtime's NCHWc depthwise kernel
// computes (MLAS's 8-channel blocks on AVX2). The planes stay NCHW: the
// kernel transposes the eight input planes into a zero-padded scratch of
// pixels x 8 channels, computes every output pixel as bias, then its nine
// taps in (kh, kw) order, each a fused multiply-add of the tap's weight
// vector with the pixel's channel vector (w * 0 on padding, as the plane
// kernels add: the same bits), and transposes the results back. Stride 2
// needs no splitting of rows into even and odd columns, and a small plane
// no row packing per plane: what made the plane kernels 2-3x slower than
// ONNX Runtime on mobilenet_v2's 14 x 14 and 7 x 7 maps and its stride-2
// layers under QTOOL_ISA=avx2.
#include "libquant/kernels/conv_depthwise_3x3.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {
namespace {

constexpr int64_t kChannels = 8;

// Rows r[0..7] of an 8 x 8 matrix become its columns (r[j][i] = old r[i][j]).
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  // s_j: column j of rows 0-3 in its low half, column j + 4 in its high half (s4..s7: rows 4-7).
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// A 4 x 4 transpose in each 128-bit half: out[j] holds element j of a, b,
// c and d's low halves in its low half, of their high halves in its high.
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void transpose4_halves(__m256 a, __m256 b, __m256 c,
                                                                                   __m256 d, __m256* out) {
  const __m256 u0 = _mm256_unpacklo_ps(a, b), u1 = _mm256_unpacklo_ps(c, d);
  const __m256 u2 = _mm256_unpackhi_ps(a, b), u3 = _mm256_unpackhi_ps(c, d);
  out[0] = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
  out[1] = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
  out[2] = _mm256_shuffle_ps(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
  out[3] = _mm256_shuffle_ps(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

// Four floats at lo, four at hi, as one vector.
[[gnu::always_inline]] __attribute__((target("avx2"))) inline __m256 halves(const float* lo, const float* hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}

// An 8 x 8 transpose whose rows are read from memory: out[j][i] =
// row(i)[j]. Loading the rows' halves into the halves of the vectors they
// end in leaves only in-lane shuffles (16, against transpose8's 24
// shuffles, 8 of them across lanes, on the one shuffle port of most AVX2
// CPUs).
template <class Row>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline void load_transposed(Row row, __m256 (&out)[8]) {
  transpose4_halves(halves(row(0), row(4)), halves(row(1), row(5)), halves(row(2), row(6)), halves(row(3), row(7)), out);
  transpose4_halves(halves(row(0) + 4, row(4) + 4), halves(row(1) + 4, row(5) + 4), halves(row(2) + 4, row(6) + 4),
                    halves(row(3) + 4, row(7) + 4), out + 4);
}

__attribute__((target("avx2"))) inline __m256i first_lanes8(int64_t count) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))), iota);
}

// P consecutive output pixels of one output row: `in` is the scratch pixel
// of the first one's tap (0, 0), `row` the floats between scratch rows.
// P accumulators beside the nine weights (16 ymm registers: P <= 6).
template <int P, int SW>
[[gnu::always_inline]] __attribute__((target("avx2,fma"))) inline void block_tile(const __m256 (&w)[9], __m256 bias,
                                                                                 const float* in, int64_t row,
                                                                                 float* out, bool clamp, float lo,
                                                                                 float hi) {
  __m256 acc[P];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) acc[j] = bias;
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 3
    for (int kw = 0; kw < 3; ++kw) {
      const float* tap = in + kh * row + kChannels * kw;
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j)
        acc[j] = _mm256_fmadd_ps(w[kh * 3 + kw], _mm256_load_ps(tap + kChannels * SW * j), acc[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
    // VMAXPS / VMINPS return their second operand (acc) when either is NaN, as clamp_f32 passes NaN.
    if (clamp) acc[j] = _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), acc[j]));
    _mm256_store_ps(out + kChannels * j, acc[j]);
  }
}

// One output row, P pixels at a time, then the rest.
template <int SW>
[[gnu::always_inline]] __attribute__((target("avx2,fma"))) inline void block_row(const __m256 (&w)[9], __m256 bias,
                                                                                const float* in, int64_t row,
                                                                                float* out, int64_t out_w, bool clamp,
                                                                                float lo, float hi) {
  constexpr int P = 6;
  int64_t ow = 0;
  for (; ow + P <= out_w; ow += P)
    block_tile<P, SW>(w, bias, in + kChannels * SW * ow, row, out + kChannels * ow, clamp, lo, hi);
  const float* i = in + kChannels * SW * ow;
  float* o = out + kChannels * ow;
  switch (out_w - ow) {
    case 5: block_tile<5, SW>(w, bias, i, row, o, clamp, lo, hi); break;
    case 4: block_tile<4, SW>(w, bias, i, row, o, clamp, lo, hi); break;
    case 3: block_tile<3, SW>(w, bias, i, row, o, clamp, lo, hi); break;
    case 2: block_tile<2, SW>(w, bias, i, row, o, clamp, lo, hi); break;
    case 1: block_tile<1, SW>(w, bias, i, row, o, clamp, lo, hi); break;
    default: break;
  }
}

// Per-thread scratch of at least `floats`, 32-byte aligned.
float* block_scratch(size_t floats) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < floats + 8) scratch.resize(floats + 8);
  float* s = scratch.data();
  return s + (8 - (reinterpret_cast<uintptr_t>(s) / sizeof(float)) % 8) % 8;
}

}  // namespace

__attribute__((target("avx2,fma"))) void dwconv3x3_block_avx2(const Depthwise3x3Channels& c) {
  const Depthwise3x3Plane& p = c.plane;
  const int64_t in_h = p.in_h, in_w = p.in_w, out_h = p.out_h, out_w = p.out_w;
  // The padded input: output (oh, ow)'s tap (kh, kw) is scratch pixel
  // (oh * stride_h + kh, ow * stride_w + kw), input pixel (that - pad); the
  // scratch also holds every input pixel (a pad at the end may drop some).
  const int64_t rows = std::max((out_h - 1) * p.stride_h + 3, p.pad_top + in_h);
  const int64_t cols = std::max((out_w - 1) * p.stride_w + 3, p.pad_left + in_w);
  const int64_t in_pixels = in_h * in_w, out_pixels = out_h * out_w;
  // The scratch input, then the outputs (pixels x 8) with room for the last
  // transpose's whole 8 pixels.
  float* s = block_scratch(static_cast<size_t>(kChannels * (rows * cols + out_pixels + 8)));
  float* out = s + kChannels * rows * cols;
  // Fields read into locals: the stores below are floats, which the
  // compiler would otherwise assume may change them.
  const int64_t pad_top = p.pad_top, pad_left = p.pad_left, in_stride = c.in_stride, out_stride = c.out_stride;
  const float* const x = p.x;
  const __m256 zero = _mm256_setzero_ps();
  const auto zero_pixels = [&](float* from, int64_t count) __attribute__((target("avx2"))) {
    for (int64_t q = 0; q < count; ++q) _mm256_store_ps(from + kChannels * q, zero);
  };
  zero_pixels(s, pad_top * cols);
  for (int64_t r = pad_top; r < pad_top + in_h; ++r) {
    zero_pixels(s + kChannels * r * cols, pad_left);
    zero_pixels(s + kChannels * (r * cols + pad_left + in_w), cols - pad_left - in_w);
  }
  zero_pixels(s + kChannels * (pad_top + in_h) * cols, (rows - pad_top - in_h) * cols);
  // Input pixels in runs of eight (across row ends): a transpose turns the
  // eight channels' runs into eight pixels' channel vectors.
  float* dst = s + kChannels * (pad_top * cols + pad_left);  // input pixel (0, 0)
  int64_t left_in_row = in_w;
  for (int64_t i = 0; i < in_pixels; i += 8) {
    const int64_t n = std::min<int64_t>(8, in_pixels - i);
    __m256 v[8];
    if (n == 8) {
      load_transposed([&](int ch) { return x + ch * in_stride + i; }, v);
    } else {
      const __m256i m = first_lanes8(n);
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) v[ch] = _mm256_maskload_ps(x + ch * in_stride + i, m);
      transpose8(v);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if (j >= n) break;
      _mm256_store_ps(dst, v[j]);
      dst += kChannels;
      if (--left_in_row == 0) {
        left_in_row = in_w;
        dst += kChannels * (cols - in_w);
      }
    }
  }
  __m256 w[9];
  {
    alignas(32) float taps[9][8];
    for (int ch = 0; ch < 8; ++ch)
      for (int k = 0; k < 9; ++k) taps[k][ch] = p.w[9 * ch + k];
#pragma GCC unroll 9
    for (int k = 0; k < 9; ++k) w[k] = _mm256_load_ps(taps[k]);
  }
  const __m256 bias = c.bias ? _mm256_loadu_ps(c.bias) : zero;
  const int64_t row = kChannels * cols;
  const int64_t stride_h = p.stride_h;
  const bool clamp = p.clamp, stride_1 = p.stride_w == 1;
  const float lo = p.lo, hi = p.hi;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const float* in = s + oh * stride_h * row;
    float* o = out + kChannels * oh * out_w;
    if (stride_1)
      block_row<1>(w, bias, in, row, o, out_w, clamp, lo, hi);
    else
      block_row<2>(w, bias, in, row, o, out_w, clamp, lo, hi);
  }
  // Output pixels in runs of eight, transposed back into the eight planes.
  float* const y = p.y;
  for (int64_t i = 0; i < out_pixels; i += 8) {
    __m256 v[8];
    // Channel ch of pixel i + j is out[8 (i + j) + ch].
    load_transposed([&](int j) { return out + kChannels * (i + j); }, v);
    const int64_t n = std::min<int64_t>(8, out_pixels - i);
    if (n == 8) {
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) _mm256_storeu_ps(y + ch * out_stride + i, v[ch]);
    } else {
      const __m256i m = first_lanes8(n);
#pragma GCC unroll 8
      for (int ch = 0; ch < 8; ++ch) _mm256_maskstore_ps(y + ch * out_stride + i, m, v[ch]);
    }
  }
}

}  // namespace quant::kernels::detail

#endif
