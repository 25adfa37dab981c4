// Quantization-aware folding of shape ops on constant weights.
//
// A weight may reach Conv/Gemm/MatMul through Transpose, Reshape, Flatten,
// Squeeze or Unsqueeze. qconvert folds those ops into the constant so no shape
// op stays on the weight path. When the weight is quantized per channel, the
// quantization axis follows the channel dimension through each op (DESIGN
// "Numerics", shape-only ops):
//   - Transpose moves it to where the permutation puts that dimension;
//   - Reshape-like ops keep it only when the channel dimension survives whole:
//     same size and same product of the dimensions before it; a merged or
//     split channel dimension cannot keep per-channel parameters.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// The channel axis after Transpose(perm): the output position holding `axis`.
std::optional<int64_t> axis_after_transpose(int64_t axis, std::span<const int64_t> perm);
// The channel axis after a reshape from `in` to `out`, or nullopt when the
// channel dimension is merged with or split into others.
std::optional<int64_t> axis_after_reshape(std::span<const int64_t> in, std::span<const int64_t> out, int64_t axis);

bool is_foldable_shape_op(const ir::Node& node);

// Applies a shape op whose non-data inputs are constants to constant `data`
// (any element type). With `axis` set (a per-channel tensor), moves it and
// fails with the reason when the op merges or splits that dimension.
Status apply_shape_op(const ir::Node& op, Tensor& data, std::optional<int64_t>& axis);

// The constant behind a weight input and the shape ops between them, nearest
// to the source first. `chain` is empty when the input is the constant itself;
// `source` is nullptr when the path is not constant shape ops only.
struct WeightPath {
  ir::Value* source = nullptr;
  std::vector<ir::Node*> chain;
};
WeightPath trace_weight_path(const ir::Graph& graph, ir::Value* input);

// The axis the source must be quantized along so that, after `chain`, the
// channel lands on `consumer_axis`; nullopt (with `why`) when no such axis exists.
std::optional<int64_t> source_axis(const WeightPath& path, int64_t consumer_axis, std::string& why);

}  // namespace quant::passes
