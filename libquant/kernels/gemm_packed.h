// Fast float GEMM: packed panels, cache blocking, an ISA-specific micro-kernel
// (gemm_ukernel.h) and work split over threads. gemm.h keeps the naive
// reference (gemm_f32_reference) that tests compare this against.
//
// C[M,N] = epilogue(A[M,K] x B[K,N]). Loop nest (GotoBLAS/BLIS): columns in
// blocks of gemm_block_columns, depth in blocks of kGemmKc; a B block (kc x
// nc, packed in NR-wide panels) stays in L2 while every MR-row A panel (L1)
// sweeps it.
//
// Every element of C is computed by one thread with the same summation order
// whatever the thread count (work is split over M and N, never over K), so
// results do not depend on --threads.
#pragma once

#include <cstdint>
#include <memory>

#include "libquant/kernels/gemm_ukernel.h"

namespace quant::kernels {

inline constexpr int64_t kGemmKc = 256;
inline constexpr int64_t kGemmNc = 512;     // the widest column block
inline constexpr int64_t kGemmNcMin = 128;  // the narrowest (ONNX Runtime's MLAS_SGEMM_STRIDEN, mlasi.h)

// Columns per B block for depth blocks of `kc` rows and an L2 of `l2_bytes`
// (cpu.h, l2_cache_bytes): the block (kc x nc floats) takes at most half of
// the L2, leaving the rest to the A panels streaming through and to C, in
// whole panels of `nr`, from kGemmNcMin to kGemmNc. 512 columns of 256 rows
// on this project's 2 MiB-L2 hosts; 128 on a 256 KiB L2, where 512 would
// spill every B block to L3 once per A panel; a short depth (a 1x1 conv of 16
// channels) keeps wide blocks anywhere. Column blocks change no result (each
// C element's sum runs over the same depth blocks).
int64_t gemm_block_columns(int64_t kc, int64_t nr, int64_t l2_bytes);

// Storage aligned for the widest vector loads (64 bytes).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(int64_t count);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

// A dense view: element (r, c) = data[r * row_stride + c * col_stride], so a
// transposed operand is the same data with the strides swapped.
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0, col_stride = 0;
};

// One operand packed once (weights at prepare time) in the micro-kernel's
// panel layout: for each depth block k0 (kGemmKc), the panels of `width`
// (MR for an A operand, NR for a B operand) rows/columns, zero padded.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  // A operand [M, K].
  static PackedMatrix pack_a(MatrixView a, int64_t M, int64_t K, const detail::GemmIsa& isa);
  // B operand [K, N].
  static PackedMatrix pack_b(MatrixView b, int64_t K, int64_t N, const detail::GemmIsa& isa);

  bool empty() const { return data_.size() == 0; }
  int64_t outer() const { return outer_; }  // M of an A operand, N of a B operand
  int64_t depth() const { return depth_; }
  const detail::GemmIsa* isa() const { return isa_; }
  // Panel p (rows/columns p*width...) of the depth block starting at k0.
  const float* panel(int64_t k0, int64_t p) const;

 private:
  static PackedMatrix pack(const float* data, int64_t line_stride, int64_t depth_stride, int64_t outer, int64_t depth,
                           int width, const detail::GemmIsa& isa);
  AlignedFloats data_;
  int64_t outer_ = 0, depth_ = 0, padded_ = 0;
  int width_ = 0;
  const detail::GemmIsa* isa_ = nullptr;
};

// Fills B panels on the fly from something that is not a plain matrix (the
// implicit im2col matrix of a convolution).
class PanelSource {
 public:
  virtual ~PanelSource() = default;
  // Writes columns [j0, j0+nc) of rows [k0, k0+kc) as ceil(nc/nr) panels of
  // kc x nr floats (element (k, j) at dst[(j-j0)/nr * kc*nr + (k-k0)*nr + (j-j0)%nr]),
  // zero padding the columns past nc.
  virtual void pack(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const = 0;
};

// Exactly one of the members is set (GemmB: rows goes with view.data).
struct GemmA {
  const PackedMatrix* packed = nullptr;
  MatrixView view{};
};
struct GemmB {
  const PackedMatrix* packed = nullptr;
  MatrixView view{};
  const PanelSource* source = nullptr;
  // Element (k, j) at view.data[rows[k] + j], read in place by the ISA's
  // kernel_rows (which the caller checks it has); each row must be readable
  // up to the end of N's last NR panel. Same sums as packing B first.
  const int64_t* rows = nullptr;
  // With rows: the columns come in segments of seg_len (a convolution's
  // output row) lying seg_pitch apart in B (its padded input row): (k, j) at
  // view.data[rows[k] + j / seg_len * seg_pitch + j % seg_len]. No panel
  // straddles two segments: each segment's last panel may be partial (N a
  // multiple of seg_len), and rows must be readable up to the end of the
  // last segment's last NR panel. 0: one segment.
  int64_t seg_len = 0, seg_pitch = 0;
};

// C = alpha * A x B (+ C when accumulate) + row_bias[i] + col_bias[j]
// + residual[i * ldr + j], then clamped to [lo, hi] when clamp (a fused
// Relu/Clip). The residual is the other operand of a fused Add (Conv -> Add);
// it may not alias C.
struct GemmEpilogue {
  float alpha = 1.0f;
  bool accumulate = false;
  const float* row_bias = nullptr;
  const float* col_bias = nullptr;
  const float* residual = nullptr;
  int64_t ldr = 0;
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
};

// How threads share the product. Auto: the rows when there are more rows
// than columns, else the columns. Rows: always the rows, each thread a
// contiguous range of them (with the thread pool's shares, the same range
// on every call), for a caller whose next kernel splits by those rows, e.g.
// a 1x1 conv that widens its input, before a depthwise conv that splits by
// channel. Results are the same bits either way (K is never split).
enum class GemmSplit { Auto, Rows };

// C (row stride ldc) = epilogue(A[M,K] x B[K,N]) on up to `threads` threads,
// with the micro-kernel of `isa` (packed operands must have been packed for
// it). Allocates only the first time a thread needs a larger scratch panel.
void gemm_f32_packed(int64_t M, int64_t N, int64_t K, const GemmA& a, const GemmB& b, float* c, int64_t ldc,
                     const GemmEpilogue& ep, int threads, const detail::GemmIsa& isa = detail::best_gemm_isa(),
                     GemmSplit split = GemmSplit::Auto);

}  // namespace quant::kernels
