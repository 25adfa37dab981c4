// AVX-512 VNNI integer GEMM micro-kernels (8 x 16, and 8 x 32 over two B
// panels for the convolution, also with the output stage fused) and a
// 16-wide output stage: one zmm accumulator per row and panel, VPDPBUSD with
// the A word broadcast from memory. VPDPBUSD (not VPDPBUSDS) wraps like the
// reference.
// Compiled with a target attribute; called only when the CPU reports
// avx512f, avx512bw, avx512vl and avx512vnni.
#include "libquant/kernels/qgemm_ukernel.h"
#include "libquant/kernels/qgemm_requant_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 8;

// acc + VPDPBUSD(u8, s8). Inline assembly because GCC 12 does not coalesce
// the intrinsic's tied accumulator with its loop-carried register: the
// kernels' loops carried two register copies per VPDPBUSD.
__attribute__((target("avx512f,avx512vnni"), always_inline)) inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

template <bool kAUnsigned>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void q8_gemm_avx512vnni_8x16(int64_t groups, const uint8_t* a,
                                                                                   const uint8_t* b, int32_t* tile) {
  __m512i acc[kMr];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) acc[r] = _mm512_setzero_si512();  // unrolled: not a memset
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i bv = _mm512_loadu_si512(b);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      int32_t word;
      std::memcpy(&word, a + r * 4, 4);
      const __m512i ar = _mm512_set1_epi32(word);
      acc[r] = kAUnsigned ? dpbusd(acc[r], ar, bv) : dpbusd(acc[r], bv, ar);
    }
    a += kMr * kQKGroup;
    b += kQNr * kQKGroup;
  }
  for (int r = 0; r < kMr; ++r) _mm512_storeu_si512(tile + r * kQNr, acc[r]);
}

// A s8 (the convolution's weights) against one or (kTwo) two u8 B panels
// into acc0 (acc1): each broadcast A word feeds two VPDPBUSD. B's groups as
// `direct` says (QDirectB).
template <bool kTwo>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void dot_a_signed(
    int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, __m512i* acc0, __m512i* acc1,
    const QDirectB& direct = {}) {
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();  // unrolled: not a memset
  const QDirectB w = b_walk(groups, kQNr * kQKGroup, direct);
  for (int64_t tap = 0; tap < w.taps; ++tap) {
    for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
      const __m512i bv0 = _mm512_loadu_si512(b0 + o);
      const __m512i bv1 = kTwo ? _mm512_loadu_si512(b1 + o) : bv0;
#pragma GCC unroll 8
      for (int r = 0; r < kMr; ++r) {
        int32_t word;
        std::memcpy(&word, a + r * 4, 4);
        const __m512i ar = _mm512_set1_epi32(word);
        acc0[r] = dpbusd(acc0[r], bv0, ar);
        if (kTwo) acc1[r] = dpbusd(acc1[r], bv1, ar);
      }
      a += kMr * kQKGroup;
    }
  }
}

// 8 x 32: sixteen accumulators.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void q8_gemm_avx512vnni_8x32_a_signed(
    int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, int32_t* tile0, int32_t* tile1) {
  __m512i acc0[kMr], acc1[kMr];
  dot_a_signed<true>(groups, a, b0, b1, acc0, acc1);
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_si512(tile0 + r * kQNr, acc0[r]);
    _mm512_storeu_si512(tile1 + r * kQNr, acc1[r]);
  }
}

// GCC 12 reports the _mm512_undefined_* pass-through operands of the unmasked
// AVX-512 intrinsics as maybe-uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// q8_gemm_avx512vnni_8x32_a_signed (kTwo) or 8x16<false> with the output
// stage fused (QMicroKernelRequant); kLines: t.lines is set. (Instances
// apart: with both stores in one, the epilogue's code doubled, and a
// short K (mobilenet_v2's stem, 27) ran 10% slower without line stores.)
template <bool kTwo, bool kLines>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void q8_conv_requant(int64_t groups, const uint8_t* a,
                                                                                    const uint8_t* b0, const uint8_t* b1,
                                                                                    const QRequantTile& t) {
  __m512i acc0[kMr], acc1[kMr];
  dot_a_signed<kTwo>(groups, a, b0, b1, acc0, acc1, t.direct);
  const int c0 = t.cols < kQNr ? t.cols : kQNr;
  const __mmask16 m0 = static_cast<__mmask16>((1u << c0) - 1);
  const __mmask16 m1 = static_cast<__mmask16>((1u << (t.cols - c0)) - 1);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {  // no early exit: unrolled, the accumulators stay in registers
    if (r < t.rows) {
      requant_row<kLines>(acc0[r], r, 0, m0, t);
      if (kTwo) requant_row<kLines>(acc1[r], r, kQNr, m1, t);
    }
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void q8_conv_requant_avx512vnni(
    int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, const QRequantTile& t) {
  if (t.lines) {
    if (t.cols > kQNr) q8_conv_requant<true, true>(groups, a, b0, b1, t);
    else q8_conv_requant<false, true>(groups, a, b0, b0, t);
  } else {
    if (t.cols > kQNr) q8_conv_requant<true, false>(groups, a, b0, b1, t);
    else q8_conv_requant<false, false>(groups, a, b0, b0, t);
  }
}

#pragma GCC diagnostic pop

// One A row against one B panel (QRowKernel): per group of four k the row's
// four bytes in every lane and one VPDPBUSD on the panel's 64 bytes, each
// int32 lane one column. Two chains over alternate groups hide the latency.
__attribute__((target("avx512f,avx512vnni"), always_inline)) inline __m512i row_step(__m512i acc, const uint8_t* a,
                                                                                      const uint8_t* b, int64_t g) {
  int32_t word;
  std::memcpy(&word, a + g * kQKGroup, 4);
  return dpbusd(acc, _mm512_set1_epi32(word), _mm512_loadu_si512(b + g * kQNr * kQKGroup));
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void q8_row_avx512vnni(int64_t groups, const uint8_t* a,
                                                                               const int16_t*, const uint8_t* b,
                                                                               int32_t* out) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    acc0 = row_step(acc0, a, b, g);
    acc1 = row_step(acc1, a, b, g + 1);
  }
  if (g < groups) acc0 = row_step(acc0, a, b, g);
  _mm512_storeu_si512(out, _mm512_add_epi32(acc0, acc1));
}

const QGemmIsa kIsa = [] {
  QGemmIsa isa{"avx512vnni", kMr, q8_gemm_avx512vnni_8x16<true>, q8_gemm_avx512vnni_8x16<false>,
               q_finish_avx512, q8_gemm_avx512vnni_8x32_a_signed, q8_conv_requant_avx512vnni};
  isa.requant_lines = true;
  isa.a_unsigned_row = q8_row_avx512vnni;
  return isa;
}();

}  // namespace

const QGemmIsa* const kQGemmIsaAvx512Vnni = &kIsa;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// q_finish_avx2 sixteen columns at a time, lane for lane the same operations
// (so the same bits), the last columns under a mask (a 7 x 7 map has 49);
// Requantizers the vector stage cannot reproduce go to q_finish_avx2. The
// requantized value is already within the output range (the float clamp has
// integer bounds, so rounding stays inside), so VPMOVDB's truncation to bytes
// is exact for uint8 and int8 alike.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void q_finish_avx512(const int32_t* acc, int64_t acc_stride,
                                                                          int64_t rows, int64_t cols, int64_t i0,
                                                                          int64_t j0, const QOutput& o) {
  const QFinishParams fp = finish_params(o);
  const bool requant = fp.requant, per_channel = fp.per_channel;
  if (requant && !o.vector_ok) {
    q_finish_avx2(acc, acc_stride, rows, cols, i0, j0, o);
    return;
  }
  const Requantizer* r = o.requant;
  const __m512 lo = _mm512_set1_ps(static_cast<float>(fp.lo)), hi = _mm512_set1_ps(static_cast<float>(fp.hi));
  const __m512i zpv = _mm512_set1_epi32(fp.zero_point);
  const size_t elem = requant ? 1 : 4;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t gi = i0 + i;
    const int32_t* src = acc + i * acc_stride;
    const __m512i row_add = _mm512_set1_epi32(o.row_add ? o.row_add[gi] : 0);
    const __m512i row_zp = _mm512_set1_epi32(o.row_zp ? o.row_zp[gi] : 0);
    const __m512i row_sum = _mm512_set1_epi32(o.row_sum ? o.row_sum[gi] : 0);
    __m512 scale = _mm512_setzero_ps();
    if (requant && (o.channel_is_row || !per_channel)) scale = _mm512_set1_ps(r->scale[per_channel ? static_cast<size_t>(gi) : 0]);
    uint8_t* out = static_cast<uint8_t*>(o.y) + static_cast<size_t>(gi * o.ldy) * elem;
    for (int64_t j = 0; j < cols; j += 16) {
      const int64_t gj = j0 + j;
      const bool whole = cols - j >= 16;
      const __mmask16 m = whole ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (cols - j)) - 1);
      __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, src + j), row_add);
      if (o.col_add) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(m, o.col_add + gj));
      if (o.row_zp) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(row_zp, _mm512_maskz_loadu_epi32(m, o.col_sum + gj)));
      if (o.row_sum) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(row_sum, _mm512_maskz_loadu_epi32(m, o.col_zp + gj)));
      if (!requant) {
        _mm512_mask_storeu_epi32(out + static_cast<size_t>(gj) * 4, m, v);
        continue;
      }
      const __m512 sc = (per_channel && !o.channel_is_row) ? _mm512_maskz_loadu_ps(m, r->scale.data() + gj) : scale;
      requant_store(v, sc, lo, hi, zpv, m, out + gj);
    }
  }
}
#pragma GCC diagnostic pop

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvx512Vnni = nullptr;
}

#endif
