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

// As MicroKernel for `tiles` tiles of m_valid rows and all NR columns side
// by side along one A panel: tile t's B panel at b + t * b_step, its C,
// column bias and residual t * NR columns on. One call per run of tiles
// rather than per tile: at a short depth (a 1x1 conv of 16 input channels:
// 16 k per tile) the call, the driver's per-tile work and the kernel's
// preamble cost as much as a quarter of the multiply-adds. The same sums and
// epilogue as `kernel`'s.
using MicroKernelRun = void (*)(int64_t kc, const float* a, const float* b, int64_t b_stride, int64_t b_step, float* c,
                                int64_t ldc, int m_valid, int64_t tiles, const MicroEpilogue& ep);

// The last B panel of a block when it has at most `column_tail_max` valid
// columns (a 7 x 7 map: 49 = 3 x 16 + 1), against `count` (at most
// kColumnTailPanels) A panels at once: raw sums over the kc block, panel t's
// as an MR x 8 tile at tiles[t * mr * 8] (row stride 8, only the first
// n_valid columns written). The caller applies the epilogue with
// store_tile_scalar. Each sum is the micro-kernel's: the same fused
// multiply-adds in the same order from zero, so the same bits.
inline constexpr int kColumnTailPanels = 4;
using ColumnTailKernel = void (*)(int64_t kc, const float* const* a, int count, const float* b, int64_t b_stride,
                                  int n_valid, float* tiles);

// As MicroKernel, with B's row k at b + b_rows[k] (element (k, j) at
// b[b_rows[k] + j]): B read in place where its rows are not evenly spaced,
// such as a zero-padded input whose rows for (channel, kh, kw) lie at
// c * plane + kh * row + kw (conv_fast.cpp's direct path). All NR columns of
// each row are read, whatever n_valid.
using RowsMicroKernel = void (*)(int64_t kc, const float* a, const float* b, const int64_t* b_rows, float* c,
                                 int64_t ldc, int m_valid, int n_valid, const MicroEpilogue& ep);

// As RowsMicroKernel, for two runs of h <= NR / 2 columns in one tile: the
// last panels of two segments (GemmB::seg_len; a row of 56 outputs ends in
// 8 of 16 columns), which would each run half the tile's multiply-add
// chains. The first run's B row k is at b + b_rows[k] and its C at c; the
// second's at b + b_rows[k] + b_step and c + c_step, and the epilogue's
// residual and column bias are read at + c_step for it too. Each sum is
// RowsMicroKernel's (the same multiply-adds in the same order).
using RowsPairKernel = void (*)(int64_t kc, const float* a, const float* b, const int64_t* b_rows, int64_t b_step,
                                float* c, int64_t ldc, int64_t c_step, int m_valid, int h, const MicroEpilogue& ep);

struct GemmIsa {
  const char* name;
  int mr, nr;
  MicroKernel kernel;
  ColumnTailKernel column_tail = nullptr;  // null: the micro-kernel runs the last panel as any other
  int column_tail_max = 0;
  RowsMicroKernel kernel_rows = nullptr;   // null: no such kernel (B must be packed or evenly spaced)
  RowsPairKernel kernel_rows_pair = nullptr;  // null: each half panel runs alone
  MicroKernelRun kernel_run = nullptr;        // null: `kernel` runs each tile
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
