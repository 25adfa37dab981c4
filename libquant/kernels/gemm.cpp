#include "libquant/kernels/gemm.h"

#include <cassert>

#include "libquant/kernels/gemm_packed.h"

namespace quant::kernels {

void gemm_f32_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B,
              float beta, const float* C, int64_t c_rows, int64_t c_cols, float* Y) {
  assert(M >= 0 && N >= 0 && K >= 0);
  const bool use_c = C != nullptr && beta != 0.0f;
  if (use_c) {
    assert(c_rows == 1 || c_rows == M);
    assert(c_cols == 1 || c_cols == N);
  }
  // Element (i,k) of op(A) and the strides to walk it.
  const int64_t a_row_step = trans_a ? 1 : K;  // i -> i+1
  const int64_t a_k_step = trans_a ? M : 1;    // k -> k+1
  for (int64_t i = 0; i < M; ++i) {
    float* y = Y + i * N;
    // An index, not a pointer: with K = 0 the caller may pass A = nullptr, and
    // nullptr + offset is undefined (clang's UBSan reports it) even unread.
    const int64_t a_row = i * a_row_step;
    if (!trans_b) {
      // i-k-j: the inner loop streams one row of B and one row of Y.
      for (int64_t j = 0; j < N; ++j) y[j] = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float av = A[a_row + k * a_k_step];
        const float* b = B + k * N;
        for (int64_t j = 0; j < N; ++j) y[j] += av * b[j];
      }
    } else {
      // B is stored [N,K]: a dot product over k reads rows of B contiguously.
      for (int64_t j = 0; j < N; ++j) {
        const float* b = B + j * K;
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += A[a_row + k * a_k_step] * b[k];
        y[j] = acc;
      }
    }
    if (use_c) {
      const float* c = C + (c_rows == 1 ? 0 : i * c_cols);
      for (int64_t j = 0; j < N; ++j) y[j] = alpha * y[j] + beta * c[c_cols == 1 ? 0 : j];
    } else if (alpha != 1.0f) {
      for (int64_t j = 0; j < N; ++j) y[j] *= alpha;
    }
  }
}

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B,
              float beta, const float* C, int64_t c_rows, int64_t c_cols, float* Y) {
  assert(M >= 0 && N >= 0 && K >= 0);
  GemmEpilogue ep;
  ep.alpha = alpha;
  if (C != nullptr && beta != 0.0f) {
    // Y starts as beta * C broadcast; the product is accumulated onto it.
    for (int64_t i = 0; i < M; ++i) {
      const float* c = C + (c_rows == 1 ? 0 : i * c_cols);
      for (int64_t j = 0; j < N; ++j) Y[i * N + j] = beta * c[c_cols == 1 ? 0 : j];
    }
    ep.accumulate = true;
  }
  const GemmA a{nullptr, trans_a ? MatrixView{A, 1, M} : MatrixView{A, K, 1}};
  const GemmB b{nullptr, trans_b ? MatrixView{B, 1, K} : MatrixView{B, N, 1}, nullptr};
  gemm_f32_packed(M, N, K, a, b, Y, N, ep, 1);
}

}  // namespace quant::kernels
