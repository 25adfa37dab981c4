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

// One A row against one B panel (QRowKernel): per group of four k the row's
// four bytes in every lane, two VPDPBUSD on the panel's 64 bytes, each int32
// lane one column. Two chains over alternate groups hide the latency.
__attribute__((target("avx2,avxvnni"), always_inline)) inline void row_step(__m256i& c0, __m256i& c1, const uint8_t* a,
                                                                             const uint8_t* b, int64_t g) {
  int32_t word;
  std::memcpy(&word, a + g * kQKGroup, 4);
  const __m256i ar = _mm256_set1_epi32(word);
  const uint8_t* bg = b + g * kQNr * kQKGroup;
  c0 = _mm256_dpbusd_avx_epi32(c0, ar, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg)));
  c1 = _mm256_dpbusd_avx_epi32(c1, ar, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 32)));
}

__attribute__((target("avx2,avxvnni"))) void q8_row_avxvnni(int64_t groups, const uint8_t* a, const int16_t*,
                                                            const uint8_t* b, int32_t* out) {
  __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();  // columns 0-7, 8-15: even groups
  __m256i b0 = _mm256_setzero_si256(), b1 = _mm256_setzero_si256();  // odd groups
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    row_step(a0, a1, a, b, g);
    row_step(b0, b1, a, b, g + 1);
  }
  if (g < groups) row_step(a0, a1, a, b, g);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi32(a0, b0));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), _mm256_add_epi32(a1, b1));
}

const QGemmIsa kIsa = [] {
  QGemmIsa isa{"avxvnni", kMr, q8_gemm_avxvnni_4x16<true>, q8_gemm_avxvnni_4x16<false>, q_finish_avx2, nullptr};
  isa.a_unsigned_row = q8_row_avxvnni;
  return isa;
}();

}  // namespace

const QGemmIsa* const kQGemmIsaAvxVnni = &kIsa;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvxVnni = nullptr;
}

#endif
