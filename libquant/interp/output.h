// Output tensors of kernels under the Session's memory plan.
#pragma once

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

}  // namespace quant::interp
