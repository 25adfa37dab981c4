// ONNX TopK (opset 1-11): the k largest or smallest values along one axis.
#pragma once

#include <cstdint>

namespace quant::kernels {

// For x viewed as [outer, len, inner], writes the k selected values and their
// indices along the middle dimension to values/indices viewed as
// [outer, k, inner], in sorted order (descending for `largest`, ascending
// otherwise). Equal values keep the lower index first, as ONNX TopK-11 and ONNX
// Runtime do. NaN counts as larger than every number (as numpy's sort and
// ONNX Runtime order it), so the comparison stays a strict weak order.
// 0 <= k <= len. `scratch` holds len int64 values. Allocates nothing.
template <class T>
void topk(const T* x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool largest, T* values, int64_t* indices,
          int64_t* scratch);

}  // namespace quant::kernels
