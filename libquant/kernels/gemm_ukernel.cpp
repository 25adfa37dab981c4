#include "libquant/kernels/gemm_ukernel.h"
#include "libquant/kernels/cpu.h"

#include <algorithm>

namespace quant::kernels::detail {
namespace {

constexpr int kPortableMr = 4, kPortableNr = 8;

void f32_gemm_portable_4x8(int64_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc,
                           int m_valid, int n_valid, const MicroEpilogue& ep) {
  float acc[kPortableMr * kPortableNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int i = 0; i < kPortableMr; ++i)
      for (int j = 0; j < kPortableNr; ++j) acc[i * kPortableNr + j] += a[i] * b[j];
    a += kPortableMr;
    b += b_stride;
  }
  store_tile_scalar(acc, kPortableNr, c, ldc, m_valid, n_valid, ep);
}

const GemmIsa kPortable{"portable", kPortableMr, kPortableNr, f32_gemm_portable_4x8};

}  // namespace

void store_tile_scalar(const float* acc, int nr, float* c, int64_t ldc, int m_valid, int n_valid, const MicroEpilogue& ep) {
  for (int i = 0; i < m_valid; ++i) {
    float* row = c + i * ldc;
    const float rb = ep.last && ep.row_bias ? ep.row_bias[i] : 0.0f;
    for (int j = 0; j < n_valid; ++j) {
      float v = acc[i * nr + j];
      if (ep.alpha != 1.0f) v *= ep.alpha;
      if (ep.accumulate) v += row[j];
      if (ep.last) {
        if (ep.row_bias) v += rb;
        if (ep.col_bias) v += ep.col_bias[j];
        if (ep.residual) v += ep.residual[i * ep.ldr + j];
        if (ep.clamp) v = std::min(std::max(v, ep.lo), ep.hi);
      }
      row[j] = v;
    }
  }
}

std::vector<const GemmIsa*> supported_gemm_isas() {
  std::vector<const GemmIsa*> isas{&kPortable};
#if defined(__x86_64__) || defined(__i386__)
  if (kGemmIsaAvx2 && cpu_supports("avx2") && cpu_supports("fma")) isas.push_back(kGemmIsaAvx2);
  if (kGemmIsaAvx512 && cpu_supports("avx512f")) isas.push_back(kGemmIsaAvx512);
#endif
  return isas;
}

const GemmIsa& best_gemm_isa() {
  static const GemmIsa* best = supported_gemm_isas().back();
  return *best;
}

}  // namespace quant::kernels::detail
