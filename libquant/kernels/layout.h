// Data movement kernels, byte-generic (any dtype of a fixed element size):
// ONNX Transpose (opset 13) and Concat (opset 13).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// y = x with its axes permuted: output dim i is input dim perm[i], so y's
// shape is [shape[perm[0]], shape[perm[1]], ...]. perm is a permutation of
// [0, rank) (callers apply the ONNX default, reversed axes, when it is
// absent). y must not alias x. Allocates nothing.
void transpose(const void* x, size_t elem_size, std::span<const int64_t> shape, std::span<const int64_t> perm, void* y);

// y = the inputs joined along axis. All shapes have the same rank and agree
// on every dimension but axis; axis in [-rank, rank) (negative counts from the
// back, as ONNX allows). y's shape is shapes[0] with dims[axis] summed over
// the inputs. Inputs with 0 elements contribute nothing and may be null.
// y must not alias an input. Allocates nothing.
void concat(std::span<const void* const> inputs, std::span<const Dims> shapes, int64_t axis, size_t elem_size, void* y);

}  // namespace quant::kernels
