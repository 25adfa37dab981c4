// Integer matrix multiplication with zero points, the core of every integer
// kernel (QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger, QGemm):
//
//   C[m][n] = sum_k (A[m][k] - a_zero_point) * (B[k][n] - b_zero_point[n])
//
// accumulated in int32 (DESIGN "Numerics"). The API is C-style and framework
// free like ONNX Runtime's MLAS: pointers, leading dimensions and counts, no
// tensors, no allocation.
//
// Types: A is uint8 or int8 (one zero point for the whole matrix, as ONNX's
// QLinearMatMul / MatMulInteger demand for a 2-D A row block); B is int8 or
// uint8 with one zero point or one per column (per output channel). The
// instantiations are (uint8, int8), (uint8, uint8), (int8, int8), (int8, uint8).
//
// Overflow: every product fits int32; the sum is exact whenever the true value
// fits int32 (always for K < 33025, since |a - za| * |b - zb| <= 255 * 255).
// Beyond that the result wraps modulo 2^32, the same in the kernel and the
// reference (the arithmetic is done in uint32, so wrapping is defined), which is
// what int32 accumulation on real hardware gives.
#pragma once

#include <cstdint>

namespace quant::kernels {

// How B is laid out in memory.
//  - BLayout::KxN: element (k, n) at b[k * ldb + n] (row-major K x N, MatMul).
//  - BLayout::NxK: element (k, n) at b[n * ldb + k] (B stored transposed, one
//    contiguous row of K per output column: Conv weights [M, C*kh*kw], Gemm
//    with transB).
enum class BLayout { KxN, NxK };

// The operands of one integer GEMM. A is M x K, element (m, k) at
// a[m * lda + k]. C is M x N, element (m, n) at c[m * ldc + n], overwritten.
// b_zero_point has b_zero_point_count entries: 0 (no zero point: 0), 1 (one
// for all of B) or N (one per column n). C may not alias A or B.
template <class TA, class TB>
struct QGemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const TA* a = nullptr;
  int64_t lda = 0;
  TA a_zero_point = 0;
  const TB* b = nullptr;
  int64_t ldb = 0;
  BLayout b_layout = BLayout::KxN;
  const TB* b_zero_point = nullptr;
  int64_t b_zero_point_count = 0;
  int32_t* c = nullptr;
  int64_t ldc = 0;
};

// The portable kernel (the interpreter runs the fast packed one of
// qgemm_packed.h; tests compare both against qgemm_reference): subtracts A's zero point on the fly and applies B's zero points
// afterwards through the row sums of (A - za),
//   sum_k (a - za)(b - zb) = sum_k (a - za) b - zb * sum_k (a - za),
// so the inner loop is a plain widening multiply-add that the compiler
// vectorises. Allocates nothing.
template <class TA, class TB>
void qgemm(const QGemmArgs<TA, TB>& args);

// The naive reference: the defining triple loop, int64 sums truncated to
// int32 (two's complement, C++20). Tests compare qgemm against it bit for bit.
template <class TA, class TB>
void qgemm_reference(const QGemmArgs<TA, TB>& args);

}  // namespace quant::kernels
