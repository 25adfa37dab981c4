// AVX-512 VNNI integer GEMM micro-kernels (8 x 16, and 8 x 32 over two B
// panels for the convolution) and a 16-wide output stage: one zmm accumulator
// per row and panel, VPDPBUSD with the A word broadcast from memory. VPDPBUSD
// (not VPDPBUSDS) wraps like the reference.
// Compiled with a target attribute; called only when the CPU reports
// avx512f, avx512bw and avx512vnni.
#include "libquant/kernels/qgemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 8;

template <bool kAUnsigned>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void q8_gemm_avx512vnni_8x16(int64_t groups, const uint8_t* a,
                                                                                   const uint8_t* b, int32_t* tile) {
  __m512i acc[kMr];
  for (int r = 0; r < kMr; ++r) acc[r] = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i bv = _mm512_loadu_si512(b);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      int32_t word;
      std::memcpy(&word, a + r * 4, 4);
      const __m512i ar = _mm512_set1_epi32(word);
      acc[r] = kAUnsigned ? _mm512_dpbusd_epi32(acc[r], ar, bv) : _mm512_dpbusd_epi32(acc[r], bv, ar);
    }
    a += kMr * kQKGroup;
    b += kQNr * kQKGroup;
  }
  for (int r = 0; r < kMr; ++r) _mm512_storeu_si512(tile + r * kQNr, acc[r]);
}

// A s8 (the convolution's weights) against two u8 B panels: 8 x 32, sixteen
// accumulators, each broadcast A word feeding two VPDPBUSD.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void q8_gemm_avx512vnni_8x32_a_signed(
    int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, int32_t* tile0, int32_t* tile1) {
  __m512i acc0[kMr], acc1[kMr];
  for (int r = 0; r < kMr; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i bv0 = _mm512_loadu_si512(b0), bv1 = _mm512_loadu_si512(b1);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      int32_t word;
      std::memcpy(&word, a + r * 4, 4);
      const __m512i ar = _mm512_set1_epi32(word);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], bv0, ar);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], bv1, ar);
    }
    a += kMr * kQKGroup;
    b0 += kQNr * kQKGroup;
    b1 += kQNr * kQKGroup;
  }
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_si512(tile0 + r * kQNr, acc0[r]);
    _mm512_storeu_si512(tile1 + r * kQNr, acc1[r]);
  }
}

// GCC 12 reports the _mm512_undefined_* pass-through operands of the unmasked
// AVX-512 intrinsics as maybe-uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// q_finish_avx2 sixteen columns at a time, lane for lane the same operations
// (so the same bits); columns past the last multiple of 16, and Requantizers
// the vector stage cannot reproduce, go to q_finish_avx2. The requantized
// value is already within the output range (the float clamp has integer
// bounds, so rounding stays inside), so VPMOVDB's truncation to bytes is exact
// for uint8 and int8 alike.
__attribute__((target("avx512f,avx512bw"))) void q_finish_avx512(const int32_t* acc, int64_t acc_stride, int64_t rows,
                                                                 int64_t cols, int64_t i0, int64_t j0,
                                                                 const QOutput& o) {
  const QFinishParams fp = finish_params(o);
  const bool requant = fp.requant, per_channel = fp.per_channel;
  const int64_t full = (requant && !o.vector_ok) ? 0 : cols / 16 * 16;
  if (full > 0) {
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
      for (int64_t j = 0; j < full; j += 16) {
        const int64_t gj = j0 + j;
        __m512i v = _mm512_add_epi32(_mm512_loadu_si512(src + j), row_add);
        if (o.col_add) v = _mm512_add_epi32(v, _mm512_loadu_si512(o.col_add + gj));
        if (o.row_zp) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(row_zp, _mm512_loadu_si512(o.col_sum + gj)));
        if (o.row_sum) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(row_sum, _mm512_loadu_si512(o.col_zp + gj)));
        if (!requant) {
          _mm512_storeu_si512(out + static_cast<size_t>(gj) * 4, v);
          continue;
        }
        const __m512 sc = (per_channel && !o.channel_is_row) ? _mm512_loadu_ps(r->scale.data() + gj) : scale;
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), sc);
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zpv);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + gj), _mm512_cvtepi32_epi8(q));
      }
    }
  }
  if (full < cols) q_finish_avx2(acc + full, acc_stride, rows, cols - full, i0, j0 + full, o);
}
#pragma GCC diagnostic pop

const QGemmIsa kIsa{"avx512vnni", kMr, q8_gemm_avx512vnni_8x16<true>, q8_gemm_avx512vnni_8x16<false>,
                    q_finish_avx512, q8_gemm_avx512vnni_8x32_a_signed};

}  // namespace

const QGemmIsa* const kQGemmIsaAvx512Vnni = &kIsa;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvx512Vnni = nullptr;
}

#endif
