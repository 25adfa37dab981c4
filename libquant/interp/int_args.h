// Helpers for the shape and indexing ops (shape-index family): attributes that
// became integer inputs over the opsets (Slice starts at 10, Pad pads at 11,
// Split sizes and Squeeze axes at 13...), index normalisation, and a ceiling
// on output sizes computed from data so that a bad input cannot ask for an
// absurd allocation.
#pragma once

#include <string>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"

namespace quant::interp {

// Outputs sized from input values (Expand, Tile, ConstantOfShape, Range, Pad,
// Resize sizes...) are refused above this many elements (4 GiB of float32).
inline constexpr int64_t kMaxComputedElements = int64_t{1} << 30;

// The values of an int32/int64 tensor of rank 0 or 1, as int64.
inline Expected<Dims> read_int_list(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    return Status::bad_input(node.op_type + " " + what + " must be int64 or int32, got " + std::string(dtype_name(t.dtype())));
  if (t.rank() > 1) return Status::bad_input(node.op_type + " " + what + " must be 1-D, got " + dims_to_string(t.shape()));
  Dims v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = t.as_int64(i);
  return v;
}

// A shape whose dims are all >= 0 and whose element count stays under
// kMaxComputedElements (checked without overflow).
inline Status check_computed_shape(const ir::Node& node, std::span<const int64_t> shape) {
  int64_t count = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return Status::bad_input(node.op_type + " output shape " + dims_to_string(shape) + " has a negative dim");
    if (d == 0) zero = true;
  }
  if (zero) return Status::ok();
  for (int64_t d : shape) {
    if (d > kMaxComputedElements / count)
      return Status::bad_input(node.op_type + " output shape " + dims_to_string(shape) + " is too large");
    count *= d;
  }
  return Status::ok();
}

// Normalizes each axis against `rank` (negative counts from the back) and
// refuses repeats.
inline Expected<Dims> normalize_axes(const ir::Node& node, Dims axes, int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank)
      return Status::bad_input(node.op_type + " axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank;
    if (seen[static_cast<size_t>(a)]) return Status::bad_input(node.op_type + " axes repeat axis " + std::to_string(a));
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// Index tensors (Gather, GatherElements, ScatterElements...): int32 or int64
// values in [-dim, dim), converted to int64 and made non-negative.
inline Expected<std::vector<int64_t>> read_indices(const ir::Node& node, const Tensor& t, int64_t dim, const char* what) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    return Status::bad_input(node.op_type + " " + what + " must be int64 or int32, got " + std::string(dtype_name(t.dtype())));
  std::vector<int64_t> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) {
    int64_t k = t.as_int64(i);
    if (k < -dim || k >= dim)
      return Status::bad_input(node.op_type + " " + what + " value " + std::to_string(k) + " is out of range for a dim of " +
                               std::to_string(dim));
    v[static_cast<size_t>(i)] = k < 0 ? k + dim : k;
  }
  return v;
}

// dispatch_numeric plus Bool, which is handed over as its uint8_t storage
// (comparisons with 0 and the value 1 mean the same for it).
template <class F>
Status dispatch_numeric_or_bool(DType t, F&& f) {
  if (t == DType::Bool) return f(uint8_t{});
  return dispatch_numeric(t, std::forward<F>(f));
}

}  // namespace quant::interp
