// Shape arithmetic shared by the reference kernels and by the callers that
// size their outputs. Standard library only (MLAS-style kernel API).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace quant::kernels {

using Dims = std::vector<int64_t>;

// Number of elements of a tensor with this shape; 1 for a scalar (rank 0).
int64_t element_count(std::span<const int64_t> shape);

// Row-major (C order) strides in elements.
Dims contiguous_strides(std::span<const int64_t> shape);

// Numpy multidirectional broadcasting (ONNX docs/Broadcasting.md): shapes are
// right-aligned, each dimension pair must be equal or contain a 1. A 1 against
// a 0 broadcasts to 0, as in numpy. nullopt when the shapes are incompatible.
std::optional<Dims> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b);

// Strides (in elements) for reading a tensor of in_shape as if it had
// out_shape: one entry per output dimension, 0 on broadcast and on missing
// leading dimensions. Requires in_shape to broadcast to out_shape.
Dims broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape);

// Spatial padding rule of Conv and the pooling ops (the deprecated auto_pad attribute).
enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

}  // namespace quant::kernels
