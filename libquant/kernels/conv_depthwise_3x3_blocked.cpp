// Depthwise 3x3 block kernels (conv_depthwise_3x3.h): eight (AVX2) or
// sixteen (AVX-512) channels at once, one channel per vector lane, as ONNX
// Runtime's NCHWc depthwise kernel computes (MLAS's channel blocks). The
// planes stay NCHW: the kernel transposes the input planes into a
// zero-padded scratch of pixels x channels, computes every output pixel as
// bias, then its nine taps in (kh, kw) order, each a fused multiply-add of
// the tap's weight vector with the pixel's channel vector (w * 0 on
// padding, as the plane kernels add: the same bits), and transposes the
// results back (conv_depthwise_3x3_blocked.inc, written once for both).
// Stride 2 needs no splitting of rows into even and odd columns, and a
// small plane no row packing of its own: what made the plane kernels 2-3x
// slower than ONNX Runtime on mobilenet_v2's 14 x 14 and 7 x 7 maps and its
// stride-2 layers under QTOOL_ISA=avx2. Where each ISA's block kernel is
// used: block_fits_avx2 / block_fits_avx512 in conv_depthwise_3x3.cpp.
#include "libquant/kernels/conv_depthwise_3x3.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {
namespace {

// The vector operations of the AVX2 block kernel: 8 channels per vector.
struct Lanes8 {
  using Vec = __m256;
  static constexpr int64_t kChannels = 8;
  static constexpr int kTile = 6;       // accumulators beside 9 weights in 16 registers
  static constexpr size_t kAlign = 8;   // floats: 32 bytes
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec zero() { return _mm256_setzero_ps(); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec load(const float* p) { return _mm256_load_ps(p); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec loadu(const float* p) { return _mm256_loadu_ps(p); }
  [[gnu::always_inline]] __attribute__((target("avx2"))) static void store(float* p, Vec v) { _mm256_store_ps(p, v); }
  [[gnu::always_inline]] __attribute__((target("avx2,fma"))) static Vec fmadd(Vec a, Vec b, Vec c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  // VMAXPS / VMINPS return their second operand (v) when either is NaN, as clamp_f32 passes NaN.
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec clamp(Vec v, float lo, float hi) {
    return _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), v));
  }
  // The first n floats of v (all when n >= 8).
  [[gnu::always_inline]] __attribute__((target("avx2"))) static void store_first(float* p, Vec v, int64_t n) {
    if (n >= 8) return _mm256_storeu_ps(p, v);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), iota), v);
  }
  // A 4 x 4 transpose in each 128-bit lane: out[j]'s lane q holds element j
  // of lane q of a, b, c and d.
  [[gnu::always_inline]] __attribute__((target("avx2"))) static void transpose4(Vec a, Vec b, Vec c, Vec d, Vec* out) {
    const Vec u0 = _mm256_unpacklo_ps(a, b), u1 = _mm256_unpacklo_ps(c, d);
    const Vec u2 = _mm256_unpackhi_ps(a, b), u3 = _mm256_unpackhi_ps(c, d);
    out[0] = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
    out[1] = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
    out[2] = _mm256_shuffle_ps(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
    out[3] = _mm256_shuffle_ps(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Four floats at lo, four at hi, as one vector.
  [[gnu::always_inline]] __attribute__((target("avx2"))) static Vec halves(const float* lo, const float* hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
  }
  // An 8 x 8 transpose of rows read from memory: out[j][i] = row(i)[j]. The
  // rows' halves are loaded into the halves of the vectors they end in, which
  // leaves 16 in-lane shuffles (a transpose of registers takes 24, 8 of them
  // across lanes, on the one shuffle port of most AVX2 CPUs).
  template <class Row>
  [[gnu::always_inline]] __attribute__((target("avx2"))) static void load_transposed(Row row, Vec (&out)[8]) {
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g)
      transpose4(halves(row(0) + 4 * g, row(4) + 4 * g), halves(row(1) + 4 * g, row(5) + 4 * g),
                                    halves(row(2) + 4 * g, row(6) + 4 * g), halves(row(3) + 4 * g, row(7) + 4 * g),
                                    out + 4 * g);
  }
};

// The AVX-512 block kernel's: 16 channels per vector.
struct Lanes16 {
  using Vec = __m512;
  static constexpr int64_t kChannels = 16;
  static constexpr int kTile = 8;
  static constexpr size_t kAlign = 16;  // floats: 64 bytes
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec zero() { return _mm512_setzero_ps(); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec load(const float* p) { return _mm512_load_ps(p); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec loadu(const float* p) { return _mm512_loadu_ps(p); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static void store(float* p, Vec v) { _mm512_store_ps(p, v); }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec fmadd(Vec a, Vec b, Vec c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  // As Lanes8's (maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized).
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec clamp(Vec v, float lo, float hi) {
    return _mm512_maskz_min_ps(0xFFFF, _mm512_set1_ps(hi), _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(lo), v));
  }
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static void store_first(float* p, Vec v, int64_t n) {
    if (n >= 16) return _mm512_storeu_ps(p, v);
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
  }
  // As Lanes8's, in each of the four 128-bit lanes.
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static void transpose4(Vec a, Vec b, Vec c, Vec d, Vec* out) {
    // (maskz forms throughout: the plain ones trip GCC 12's -Wmaybe-uninitialized)
    const Vec u0 = _mm512_maskz_unpacklo_ps(0xFFFF, a, b), u1 = _mm512_maskz_unpacklo_ps(0xFFFF, c, d);
    const Vec u2 = _mm512_maskz_unpackhi_ps(0xFFFF, a, b), u3 = _mm512_maskz_unpackhi_ps(0xFFFF, c, d);
    out[0] = _mm512_maskz_shuffle_ps(0xFFFF, u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
    out[1] = _mm512_maskz_shuffle_ps(0xFFFF, u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
    out[2] = _mm512_maskz_shuffle_ps(0xFFFF, u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
    out[3] = _mm512_maskz_shuffle_ps(0xFFFF, u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Four floats from each of a, b, c and d, as the vector's four lanes.
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static Vec quarters(const float* a, const float* b,
                                                                               const float* c, const float* d) {
    const __m512 v = _mm512_zextps128_ps512(_mm_loadu_ps(a));
    return _mm512_insertf32x4(_mm512_insertf32x4(_mm512_insertf32x4(v, _mm_loadu_ps(b), 1), _mm_loadu_ps(c), 2),
                              _mm_loadu_ps(d), 3);
  }
  // A 16 x 16 transpose of rows read from memory, as Lanes8's: four rows'
  // quarters go into the four 128-bit lanes of a vector, then in-lane
  // shuffles only (32 for the 256 floats).
  template <class Row>
  [[gnu::always_inline]] __attribute__((target("avx512f"))) static void load_transposed(Row row, Vec (&out)[16]) {
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g)
      transpose4(quarters(row(0) + 4 * g, row(4) + 4 * g, row(8) + 4 * g, row(12) + 4 * g),
                 quarters(row(1) + 4 * g, row(5) + 4 * g, row(9) + 4 * g, row(13) + 4 * g),
                 quarters(row(2) + 4 * g, row(6) + 4 * g, row(10) + 4 * g, row(14) + 4 * g),
                 quarters(row(3) + 4 * g, row(7) + 4 * g, row(11) + 4 * g, row(15) + 4 * g), out + 4 * g);
  }
};

#define QTOOL_BLOCK_TARGET __attribute__((target("avx2,fma")))
#define QTOOL_BLOCK_LANES Lanes8
#define QTOOL_BLOCK_NAME block_kernel_avx2
#define QTOOL_BLOCK_TILE block_tile_avx2
#define QTOOL_BLOCK_ROW block_row_avx2
#include "libquant/kernels/conv_depthwise_3x3_blocked.inc"
#undef QTOOL_BLOCK_TARGET
#undef QTOOL_BLOCK_LANES
#undef QTOOL_BLOCK_NAME
#undef QTOOL_BLOCK_TILE
#undef QTOOL_BLOCK_ROW
#define QTOOL_BLOCK_TARGET __attribute__((target("avx512f")))
#define QTOOL_BLOCK_LANES Lanes16
#define QTOOL_BLOCK_NAME block_kernel_avx512
#define QTOOL_BLOCK_TILE block_tile_avx512
#define QTOOL_BLOCK_ROW block_row_avx512
#include "libquant/kernels/conv_depthwise_3x3_blocked.inc"
#undef QTOOL_BLOCK_TARGET
#undef QTOOL_BLOCK_LANES
#undef QTOOL_BLOCK_NAME
#undef QTOOL_BLOCK_TILE
#undef QTOOL_BLOCK_ROW

}  // namespace

void dwconv3x3_block_avx2(const Depthwise3x3Channels& c) { block_kernel_avx2(c); }
void dwconv3x3_block_avx512(const Depthwise3x3Channels& c) { block_kernel_avx512(c); }

}  // namespace quant::kernels::detail

#endif
