// Reductions over a set of axes (ONNX Reduce*, opset 1-18), ArgMax/ArgMin
// (opset 13) and CumSum (opset 14). Standard library only (MLAS-style).
#pragma once

#include <cstdint>
#include <span>

namespace quant::kernels {

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// y[o] = reduction of x over the axes flagged in `reduced` (one flag per
// dimension of `shape`), for every combination o of the kept axes, in
// row-major order of the kept axes (the same order with or without keepdims).
// Floating types accumulate in double, integer types in 64 bits, and the
// result is converted back to T (integer Mean divides with truncation, as
// ONNX Runtime does).
// An empty reduction (a reduced dimension of size 0) gives the identity of the
// operation, as ONNX ReduceX-18 states: 0 for Sum, L1, L2, SumSquare; 1 for
// Prod; -inf (the lowest value for integers) for Max, LogSum and LogSumExp;
// +inf (the highest) for Min; NaN (0 for integers) for Mean.
// LogSumExp subtracts the slice maximum before exp so that it does not
// overflow. y must not alias x. Allocates only the small per-call index
// vectors.
template <class T>
void reduce(ReduceOp op, const T* x, std::span<const int64_t> shape, std::span<const bool> reduced, T* y);

// Index along the middle dimension of x viewed as [outer, len, inner] of the
// maximum (or minimum) value, for each (outer, inner) pair; ties go to the
// first occurrence, or to the last with select_last_index (ONNX ArgMax-13).
// len >= 1. NaN compares false, so a NaN is never selected over a number.
template <class T>
void arg_reduce(bool is_max, bool select_last_index, const T* x, int64_t outer, int64_t len, int64_t inner,
                int64_t* y);

// Cumulative sum along the middle dimension of [outer, len, inner] (ONNX
// CumSum-14): `exclusive` leaves out the element itself (the first sum is 0),
// `reverse` sums from the end. y must not alias x.
template <class T>
void cumsum(const T* x, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, T* y);

}  // namespace quant::kernels
