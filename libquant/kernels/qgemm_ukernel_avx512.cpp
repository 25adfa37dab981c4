// AVX-512 VNNI integer GEMM micro-kernel, 8 x 16: one zmm accumulator per row
// (16 columns), VPDPBUSD with the A word broadcast from memory, eight
// products per B load. VPDPBUSD (not VPDPBUSDS) wraps like the reference.
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

const QGemmIsa kIsa{"avx512vnni", kMr, q8_gemm_avx512vnni_8x16<true>, q8_gemm_avx512vnni_8x16<false>,
                    q_finish_avx2, q8_gemm_avx512vnni_8x32_a_signed};

}  // namespace

const QGemmIsa* const kQGemmIsaAvx512Vnni = &kIsa;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvx512Vnni = nullptr;
}

#endif
