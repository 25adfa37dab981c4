// Output tensors of kernels under the Session's memory plan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace quant::interp {

// Makes `out` a tensor of `dtype` and `shape` for a kernel to overwrite
// entirely. The Session may hand a kernel the planned buffer of its output
// (buffer_plan.h) in `out`, as a view (Tensor::view) of bytes that values of
// any type and size share over a run: when they are enough they are kept,
// neither reallocated nor zero-filled, so their contents are stale;
// otherwise a new zero-filled tensor is allocated (bad_input for a shape
// check_tensor_size refuses). Kernels that accumulate into their output
// must not use this.
inline Status reuse_or_create(Tensor& out, DType dtype, Dims shape) {
  if (!out.empty()) {
    auto count = checked_element_count(shape);
    if (count && out.can_hold(dtype, *count)) {
      out.reuse(dtype, std::move(shape));
      return Status::ok();
    }
  }
  QT_ASSIGN_OR_RETURN(out, Tensor::create(dtype, std::move(shape)));
  return Status::ok();
}

// For a Concat (or QLinearConcat) whose output `out` already holds `dtype`
// and `shape`: which inputs the memory plan computed into their slices of
// `out` (Session's concat_slices, only where the dims before the axis
// multiply to `outer` == 1); those need no copy. An input lying in out's
// bytes anywhere else (a run whose shapes differ from the plan's) would be
// overwritten before it is read: `out` then gets bytes of its own and no
// input counts as in its slice.
inline Expected<std::vector<char>> inputs_in_slices(Tensor& out, DType dtype, const Dims& shape,
                                                    std::span<const Tensor* const> inputs, int64_t outer) {
  std::vector<char> in_slice(inputs.size(), 0);
  const auto* const begin = static_cast<const std::byte*>(out.raw());
  const auto* const end = begin + out.byte_size();
  size_t at = 0;
  bool clash = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto* x = static_cast<const std::byte*>(inputs[k]->raw());
    const size_t bytes = inputs[k]->byte_size();
    in_slice[k] = outer == 1 && bytes > 0 && x == begin + at;
    clash = clash || (!in_slice[k] && bytes > 0 && x < end && x + bytes > begin);
    at += bytes;
  }
  if (clash) {
    out = Tensor();
    QT_RETURN_IF_ERROR(reuse_or_create(out, dtype, shape));
    std::fill(in_slice.begin(), in_slice.end(), 0);
  }
  return in_slice;
}

}  // namespace quant::interp
