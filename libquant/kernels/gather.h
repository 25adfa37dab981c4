// Indexing kernels: ONNX Gather, GatherElements, GatherND (opset 13),
// ScatterElements and ScatterND (opset 16 reductions, max/min of opset 18),
// Unique (opset 11). Indices arrive as int64 already made non-negative and
// checked against their dims by the caller (interp validates user data
// before any kernel indexes with it). Gathers are byte-generic; scatters with
// a reduction need the element type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// Gather: x viewed as [outer, axis_dim, inner], y as [outer, n_indices, inner]:
//   y[o, j, i] = x[o, indices[j], i], each index in [0, axis_dim).
void gather(const void* x, size_t elem_size, int64_t outer, int64_t axis_dim, int64_t inner, const int64_t* indices,
            int64_t n_indices, void* y);

// GatherElements: x and indices have the same rank; y is shaped like indices and
//   y[p] = x[p with coordinate `axis` replaced by indices[p]],
// where every other coordinate of p is < the matching x dim and indices are
// in [0, x_shape[axis]).
void gather_elements(const void* x, size_t elem_size, std::span<const int64_t> x_shape, const int64_t* indices,
                     std::span<const int64_t> idx_shape, int64_t axis, void* y);

// GatherND with batch_dims b: x is [B..., D...] (B = its first b dims),
// indices [B..., M..., k] with k <= rank(x) - b; each index tuple (entry j in
// [0, x_shape[b + j])) selects the slice x[B..., i_0, ..., i_{k-1}, :...], and
// y is [B..., M..., x_shape[b + k:]...].
void gather_nd(const void* x, size_t elem_size, std::span<const int64_t> x_shape, const int64_t* indices,
               std::span<const int64_t> idx_shape, int64_t batch_dims, void* y);

enum class ScatterReduction { None, Add, Mul, Max, Min };

// ScatterElements: y already holds a copy of data (shape y_shape); indices and
// updates share idx_shape (same rank as y, each dim no larger than y's off
// the axis) and for every position p
//   y[p with coordinate `axis` = indices[p]] = reduce(that, updates[p])
// in row-major order of p, so with None the last duplicate wins.
template <class T>
void scatter_elements(T* y, std::span<const int64_t> y_shape, const int64_t* indices, std::span<const int64_t> idx_shape,
                      const T* updates, int64_t axis, ScatterReduction reduction);

// ScatterND: y already holds a copy of data; indices is [M..., k] with k <=
// rank(y), each tuple within y's leading dims; updates is [M..., y_shape[k:]...];
// each update slice is reduced into the slice its index tuple selects, in order.
template <class T>
void scatter_nd(T* y, std::span<const int64_t> y_shape, const int64_t* indices, std::span<const int64_t> idx_shape,
                const T* updates, ScatterReduction reduction);

// Unique over slices: x viewed as [outer, axis_dim, inner], the slices being
// x[:, j, :] for j in [0, axis_dim) (without an axis, outer = inner = 1 over
// the flattened input). Fills, for the distinct slices in ascending
// lexicographic order (sorted) or in order of first occurrence (not sorted):
// first_index[u] = j of its first occurrence, counts[u]; and inverse[j] = u
// of slice j. The vectors are resized here: their length depends on the data.
template <class T>
void unique_slices(const T* x, int64_t outer, int64_t axis_dim, int64_t inner, bool sorted,
                   std::vector<int64_t>& first_index, std::vector<int64_t>& inverse, std::vector<int64_t>& counts);

}  // namespace quant::kernels
