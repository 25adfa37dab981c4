#include "libquant/kernels/shape_util.h"

#include <algorithm>
#include <cassert>

namespace quant::kernels {

int64_t element_count(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0) return 0;  // before any product: the other dims may be large
    n *= d;
  }
  return n;
}

Dims contiguous_strides(std::span<const int64_t> shape) {
  Dims strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::optional<Dims> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Dimension i counted from the right; a missing dimension acts as 1.
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t d;
    if (da == db) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else {
      return std::nullopt;
    }
    out[rank - 1 - i] = d;
  }
  return out;
}

Dims broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape) {
  assert(in_shape.size() <= out_shape.size());
  const size_t lead = out_shape.size() - in_shape.size();
  Dims strides(out_shape.size(), 0);
  int64_t s = 1;
  for (size_t i = in_shape.size(); i-- > 0;) {
    assert(in_shape[i] == out_shape[lead + i] || in_shape[i] == 1);
    strides[lead + i] = in_shape[i] == 1 ? 0 : s;
    s *= in_shape[i];
  }
  return strides;
}

}  // namespace quant::kernels
