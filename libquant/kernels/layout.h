// Data movement kernels, byte-generic (any dtype of a fixed element size):
// ONNX Transpose (opset 13) and Concat (opset 13), and the per-axis index
// remapping behind Slice, Pad, Tile and Expand, plus ReverseSequence.
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

// Per-axis remapping: y has shape [maps[0].size(), maps[1].size(), ...] and
//   y[o_0, ..., o_{r-1}] = x[maps[0][o_0], ..., maps[r-1][o_{r-1}]]
// or the elem_size bytes at `fill` when any map entry on the way is -1. Every
// other entry must lie in [0, x_shape[d]); maps.size() == x_shape.size().
// This one loop serves Slice (start + j*step), Pad (offset, clamp, reflect or
// -1 for the constant), Tile (o % dim) and Expand (0 on broadcast dims). A run
// of consecutive indices on the last axis is copied with one memcpy. y must
// not alias x. Allocates nothing.
void remap_axes(const void* x, size_t elem_size, std::span<const int64_t> x_shape, std::span<const Dims> maps,
                const void* fill, void* y);

// ReverseSequence (opset 10): x is [time, batch, rest...] (batch_axis 1,
// time_axis 0) or [batch, time, rest...] (batch_axis 0, time_axis 1), `inner`
// being the product of the rest. For batch b the first seq_lens[b] steps
// (0 <= seq_lens[b] <= time) are reversed, the others copied. y must not
// alias x. Allocates nothing.
void reverse_sequence(const void* x, size_t elem_size, int64_t time, int64_t batch, int64_t inner, bool time_major,
                      const int64_t* seq_lens, void* y);

}  // namespace quant::kernels
