// Linear algebra for types other than float32 and for the ops around it:
// Gemm and MatMul for any numeric type (float32 has the tuned gemm_f32 /
// matmul_f32), Det (opset 11) and Trilu (opset 14). Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace quant::kernels {

// Y[M,N] = alpha * op(A) * op(B) + beta * C with the conventions of gemm_f32
// (C [c_rows, c_cols] broadcast, ignored when null or beta == 0). Products
// accumulate in double for floating T and in 64-bit integers otherwise;
// alpha/beta are applied in double and the result converted to T.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const T* A, const T* B, double beta,
          const T* C, int64_t c_rows, int64_t c_cols, T* Y);

// numpy.matmul for shapes accepted by matmul_output_shape (matmul.h); Y has
// that shape and must not alias A or B.
template <class T>
void matmul(const T* A, std::span<const int64_t> a_shape, const T* B, std::span<const int64_t> b_shape, T* Y);

// Determinants of `batch` row-major M x M matrices, by LU decomposition with
// partial pivoting in double. `scratch` holds M * M doubles.
template <class T>
void det(const T* x, int64_t batch, int64_t M, T* y, double* scratch);

// Trilu-14 on `batch` row-major [rows, cols] matrices of elements of
// `elem_size` bytes: keeps element (i, j) when j - i >= k (upper) or
// j - i <= k (lower), writes zero bytes elsewhere. y must not alias x.
void trilu(const void* x, int64_t batch, int64_t rows, int64_t cols, int64_t k, bool upper, size_t elem_size, void* y);

}  // namespace quant::kernels
