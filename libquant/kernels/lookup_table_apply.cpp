// y[i] = table[x[i]] for bytes (lookup_table.h): the gather of every 8-bit
// table op (QLinearSigmoid, QLinearLeakyRelu, qtool's QLinearLookup). A
// scalar loop takes 1.2 cycles a byte; efficientnet_b0's int8 model gathers
// 6.5 million bytes per image (its SiLUs), 2.3 of its 9.1 ms on one thread
// (build/step_bench, AMD EPYC with AVX-512 VBMI, 2026-12-03).
//
// AVX-512 VBMI: VPERMI2B looks up 64 bytes in a 128-byte table; two of them
// cover the table's halves, and each byte's top bit picks between them.
// AVX2: VPSHUFB looks up 32 bytes in a 16-byte row (the same row in both
// 128-bit lanes) by their low 4 bits, and gives 0 where the index has its top
// bit set. With idx = (x & 0x7F) - 16 h, row h of a half is read (idx in
// 0..15) for h <= x's row and zeroed (idx negative) for h > it; the rows are
// stored XOR-ed with the row before, so that the XOR of rows 0..r is row r.
// Both halves share the indices; x's top bit picks the half. Every path gives
// the table's bytes, so the paths agree bit for bit (tests).
#include <cstdint>
#include <cstring>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/lookup_table.h"
#include "libquant/kernels/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_LOOKUP_X86 1
#endif

namespace quant::kernels {
namespace {

void gather_portable(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

#if defined(QTOOL_LOOKUP_X86)
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void gather_vbmi(const uint8_t* x, const uint8_t* table,
                                                                        uint8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
  gather_portable(x + i, table, y + i, n - i);
}

__attribute__((target("avx2"))) void gather_avx2(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n) {
  // rows[half][h]: bytes 128 * half + 16 h .. + 15, XOR-ed with row h - 1.
  __m256i rows[2][8];
  for (int half = 0; half < 2; ++half)
    for (int h = 0; h < 8; ++h) {
      __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 128 * half + 16 * h));
      if (h > 0) r = _mm_xor_si128(r, _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 128 * half + 16 * (h - 1))));
      rows[half][h] = _mm256_broadcastsi128_si256(r);
    }
  const __m256i low7 = _mm256_set1_epi8(0x7F), sixteen = _mm256_set1_epi8(16);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    __m256i idx = _mm256_and_si256(v, low7);
    __m256i lo = _mm256_shuffle_epi8(rows[0][0], idx), hi = _mm256_shuffle_epi8(rows[1][0], idx);
#pragma GCC unroll 7
    for (int h = 1; h < 8; ++h) {
      idx = _mm256_sub_epi8(idx, sixteen);
      lo = _mm256_xor_si256(lo, _mm256_shuffle_epi8(rows[0][h], idx));
      hi = _mm256_xor_si256(hi, _mm256_shuffle_epi8(rows[1][h], idx));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_blendv_epi8(lo, hi, v));
  }
  gather_portable(x + i, table, y + i, n - i);
}
#endif

using GatherFn = void (*)(const uint8_t*, const uint8_t*, uint8_t*, int64_t);

// Avx512 stands for AVX-512 VBMI (with BW), which every AVX-512 CPU since
// Ice Lake and Zen 4 has; an AVX-512 CPU without it takes the AVX2 path.
GatherFn gather_fn(IsaCap level) {
  switch (level) {
#if defined(QTOOL_LOOKUP_X86)
    case IsaCap::Avx512:
      return cpu_supports("avx512bw") && cpu_supports("avx512vbmi") ? gather_vbmi : nullptr;
    case IsaCap::Avx2:
      return cpu_supports("avx2") ? gather_avx2 : nullptr;
#endif
    case IsaCap::Portable:
      return gather_portable;
    default:
      return nullptr;
  }
}

}  // namespace

template <class T>
void apply_lookup_table(const T* x, const T* table, T* y, int64_t n, int threads) {
  static const GatherFn fn = [] {
    for (IsaCap level : {IsaCap::Avx512, IsaCap::Avx2})
      if (GatherFn f = gather_fn(level)) return f;
    return gather_fn(IsaCap::Portable);
  }();
  const auto* xb = reinterpret_cast<const uint8_t*>(x);
  const auto* tb = reinterpret_cast<const uint8_t*>(table);
  auto* yb = reinterpret_cast<uint8_t*>(y);
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { fn(xb + i0, tb, yb + i0, len); });
}

template void apply_lookup_table<uint8_t>(const uint8_t*, const uint8_t*, uint8_t*, int64_t, int);
template void apply_lookup_table<int8_t>(const int8_t*, const int8_t*, int8_t*, int64_t, int);

bool detail::lookup_table_path(IsaCap level, const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n) {
  const GatherFn fn = gather_fn(level);
  if (fn) fn(x, table, y, n);
  return fn != nullptr;
}

}  // namespace quant::kernels
