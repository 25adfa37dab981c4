// Float GEMM micro-kernels (internal to gemm_packed.cpp and its tests).
//
// A micro-kernel multiplies one packed A panel (kc x MR, element (i,k) at
// a[k*MR + i]) by one B panel (kc x NR, element (k,j) at b[k*b_stride + j]:
// b_stride = NR for a packed panel, the row stride for a row-major B read in
// place)
// and writes the MR x NR tile to C (row stride ldc), of which only the first
// m_valid rows and n_valid columns exist. Packing pads panels with zeros, so
// the kernel always computes the full tile and stores only the valid part.
//
// Kernel names spell type, ISA and tile (XNNPACK's convention). The ISA is
// chosen at run time (kernels/cpu.h, capped by QTOOL_ISA); the portable kernel is plain
// C++ and runs anywhere.
#pragma once

#include <cstdint>
#include <vector>

namespace quant::kernels::detail {

// What to do with the tile after the product (acc = sum over this kc block):
//   v = alpha * acc, then + C (accumulate), then, on the last block of K only,
//   + row_bias[i] + col_bias[j] + residual[i*ldr + j] and clamp to [lo, hi]
//   (a Conv -> Add -> Relu fused: the Add's other operand is the residual).
struct MicroEpilogue {
  float alpha = 1.0f;
  bool accumulate = false;
  bool last = true;
  const float* row_bias = nullptr;  // m_valid entries (this tile's rows) or null
  const float* col_bias = nullptr;  // n_valid entries (this tile's columns) or null
  const float* residual = nullptr;  // this tile's element (0, 0) or null
  int64_t ldr = 0;                  // row stride of residual
  bool clamp = false;               // NaN passes through the clamp, as in clamp_f32
  float lo = 0.0f, hi = 0.0f;
};

using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc,
                             int m_valid, int n_valid, const MicroEpilogue& ep);

struct GemmIsa {
  const char* name;
  int mr, nr;
  MicroKernel kernel;
};

// The fastest kernel this CPU runs (chosen once).
const GemmIsa& best_gemm_isa();
// Every kernel this CPU runs, portable first (tests compare each to the reference).
std::vector<const GemmIsa*> supported_gemm_isas();

// Applies the epilogue to a full MR x NR tile computed in `acc` (row-major, NR
// per row) and stores its valid part: the shared tail of every micro-kernel.
void store_tile_scalar(const float* acc, int nr, float* c, int64_t ldc, int m_valid, int n_valid, const MicroEpilogue& ep);

// ISA kernels, defined in gemm_ukernel_<isa>.cpp; null when not compiled in.
extern const GemmIsa* const kGemmIsaAvx2;
extern const GemmIsa* const kGemmIsaAvx512;

}  // namespace quant::kernels::detail
