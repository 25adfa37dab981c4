// AVX-VNNI integer GEMM micro-kernel, 4 x 16: VPDPBUSD on ymm registers (four
// u8 x s8 products summed into each int32 lane, no saturation: the VNNI form
// without the trailing S). 8 accumulators, two B loads and four broadcasts
// per group of four k. Compiled with a target attribute; called only when
// CPUID reports AVX-VNNI.
#include "libquant/kernels/qgemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
#include <immintrin.h>

#include <cstring>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 4;

template <bool kAUnsigned>
__attribute__((target("avx2,avxvnni"))) void q8_gemm_avxvnni_4x16(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                                    int32_t* tile) {
  __m256i acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
#pragma GCC unroll 4
    for (int r = 0; r < kMr; ++r) {
      int32_t word;
      std::memcpy(&word, a + r * 4, 4);
      const __m256i ar = _mm256_set1_epi32(word);
      if constexpr (kAUnsigned) {
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], ar, b0);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], ar, b1);
      } else {
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], b0, ar);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], b1, ar);
      }
    }
    a += kMr * kQKGroup;
    b += kQNr * kQKGroup;
  }
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + r * kQNr), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + r * kQNr + 8), acc[r][1]);
  }
}

const QGemmIsa kIsa{"avxvnni", kMr, q8_gemm_avxvnni_4x16<true>, q8_gemm_avxvnni_4x16<false>, q_finish_avx2, nullptr};

}  // namespace

const QGemmIsa* const kQGemmIsaAvxVnni = &kIsa;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvxVnni = nullptr;
}

#endif
