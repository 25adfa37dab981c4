// General matrix multiply, ONNX Gemm (opset 13).
#pragma once

#include <cstdint>

namespace quant::kernels {

// Y[M,N] = alpha * op(A) * op(B) + beta * C, row-major, no padding between rows.
// op(A) is A[M,K] or, with trans_a, the transpose of A stored as [K,M];
// op(B) is B[K,N] or, with trans_b, the transpose of B stored as [N,K].
// C (nullable) has shape [c_rows, c_cols], unidirectionally broadcast to
// [M,N]: c_rows is 1 or M, c_cols is 1 or N (a 1-D C of length N is
// c_rows=1, c_cols=N; a scalar is 1x1). C is ignored when it is null or beta is
// 0, as in ONNX Runtime, so inf/NaN in an unused C do not leak into Y.
// Y must not alias A, B or C. Accumulates in float.
//
// gemm_f32 runs the packed, blocked kernel of gemm_packed.h on the calling
// thread (allocating only scratch panels the first time a thread needs them);
// gemm_f32_reference is the naive loop nest it is tested against.
void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B,
              float beta, const float* C, int64_t c_rows, int64_t c_cols, float* Y);
void gemm_f32_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B,
              float beta, const float* C, int64_t c_rows, int64_t c_cols, float* Y);

}  // namespace quant::kernels
