#include "libquant/kernels/gather.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <numeric>

namespace quant::kernels {

void gather(const void* x, size_t elem_size, int64_t outer, int64_t axis_dim, int64_t inner, const int64_t* indices,
            int64_t n_indices, void* y) {
  const size_t row = static_cast<size_t>(inner) * elem_size;
  if (row == 0) return;
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  for (int64_t o = 0; o < outer; ++o) {
    const unsigned char* plane = src + static_cast<size_t>(o * axis_dim) * row;
    for (int64_t j = 0; j < n_indices; ++j, dst += row) {
      assert(indices[j] >= 0 && indices[j] < axis_dim);
      std::memcpy(dst, plane + static_cast<size_t>(indices[j]) * row, row);
    }
  }
}

namespace {

// Row-major offset in a tensor of `strides` of the coordinate `coord`, with
// coordinate `axis` replaced by `at`.
int64_t offset_with(std::span<const int64_t> coord, std::span<const int64_t> strides, size_t axis, int64_t at) {
  int64_t off = 0;
  for (size_t d = 0; d < coord.size(); ++d) off += (d == axis ? at : coord[d]) * strides[d];
  return off;
}

// Advances a row-major coordinate within `shape`.
void next_coord(Dims& coord, std::span<const int64_t> shape) {
  for (size_t d = coord.size(); d-- > 0;) {
    if (++coord[d] < shape[d]) return;
    coord[d] = 0;
  }
}

template <class T>
T reduce(T a, T b, ScatterReduction r) {
  switch (r) {
    case ScatterReduction::None: return b;
    case ScatterReduction::Add: return static_cast<T>(a + b);
    case ScatterReduction::Mul: return static_cast<T>(a * b);
    case ScatterReduction::Max: return std::max(a, b);
    case ScatterReduction::Min: return std::min(a, b);
  }
  return b;
}

}  // namespace

void gather_elements(const void* x, size_t elem_size, std::span<const int64_t> x_shape, const int64_t* indices,
                     std::span<const int64_t> idx_shape, int64_t axis, void* y) {
  assert(x_shape.size() == idx_shape.size());
  const int64_t count = element_count(idx_shape);
  const Dims strides = contiguous_strides(x_shape);
  Dims coord(idx_shape.size(), 0);
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  for (int64_t p = 0; p < count; ++p, next_coord(coord, idx_shape)) {
    const int64_t off = offset_with(coord, strides, static_cast<size_t>(axis), indices[p]);
    std::memcpy(dst + static_cast<size_t>(p) * elem_size, src + static_cast<size_t>(off) * elem_size, elem_size);
  }
}

void gather_nd(const void* x, size_t elem_size, std::span<const int64_t> x_shape, const int64_t* indices,
               std::span<const int64_t> idx_shape, int64_t batch_dims, void* y) {
  const size_t b = static_cast<size_t>(batch_dims);
  const size_t k = static_cast<size_t>(idx_shape.back());
  assert(b + k <= x_shape.size());
  int64_t batch = 1;
  for (size_t d = 0; d < b; ++d) batch *= x_shape[d];
  // Tuples per batch entry, and the size of one selected slice.
  const int64_t tuples = batch == 0 ? 0 : element_count(idx_shape.first(idx_shape.size() - 1)) / batch;
  const int64_t slice = element_count(x_shape.subspan(b + k));
  const Dims strides = contiguous_strides(x_shape);
  const int64_t batch_stride = b == 0 ? element_count(x_shape) : strides[b - 1];
  const size_t slice_bytes = static_cast<size_t>(slice) * elem_size;
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t t = 0; t < tuples; ++t, dst += slice_bytes) {
      const int64_t* tuple = indices + (n * tuples + t) * static_cast<int64_t>(k);
      int64_t off = n * batch_stride;
      for (size_t j = 0; j < k; ++j) off += tuple[j] * strides[b + j];
      if (slice_bytes) std::memcpy(dst, src + static_cast<size_t>(off) * elem_size, slice_bytes);
    }
  }
}

template <class T>
void scatter_elements(T* y, std::span<const int64_t> y_shape, const int64_t* indices, std::span<const int64_t> idx_shape,
                      const T* updates, int64_t axis, ScatterReduction reduction) {
  assert(y_shape.size() == idx_shape.size());
  const int64_t count = element_count(idx_shape);
  const Dims strides = contiguous_strides(y_shape);
  Dims coord(idx_shape.size(), 0);
  for (int64_t p = 0; p < count; ++p, next_coord(coord, idx_shape)) {
    T& dst = y[offset_with(coord, strides, static_cast<size_t>(axis), indices[p])];
    dst = reduce(dst, updates[p], reduction);
  }
}

template <class T>
void scatter_nd(T* y, std::span<const int64_t> y_shape, const int64_t* indices, std::span<const int64_t> idx_shape,
                const T* updates, ScatterReduction reduction) {
  const size_t k = static_cast<size_t>(idx_shape.back());
  assert(k <= y_shape.size());
  const int64_t tuples = element_count(idx_shape.first(idx_shape.size() - 1));
  const int64_t slice = element_count(y_shape.subspan(k));
  const Dims strides = contiguous_strides(y_shape);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j) off += indices[t * static_cast<int64_t>(k) + static_cast<int64_t>(j)] * strides[j];
    for (int64_t i = 0; i < slice; ++i) y[off + i] = reduce(y[off + i], updates[t * slice + i], reduction);
  }
}

template <class T>
void unique_slices(const T* x, int64_t outer, int64_t axis_dim, int64_t inner, bool sorted,
                   std::vector<int64_t>& first_index, std::vector<int64_t>& inverse, std::vector<int64_t>& counts) {
  // Lexicographic comparison of slices j and k, element by element in
  // row-major order. NaN sorts after every number and equals NaN, so the
  // order stays a strict weak ordering (numpy.unique sorts NaN last too).
  auto less = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  };
  auto compare = [&](int64_t j, int64_t k) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* a = x + (o * axis_dim + j) * inner;
      const T* b = x + (o * axis_dim + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (less(a[i], b[i])) return -1;
        if (less(b[i], a[i])) return 1;
      }
    }
    return 0;
  };
  // Order slices by content, ties by position: each run of equal slices then
  // starts with its first occurrence.
  std::vector<int64_t> order(static_cast<size_t>(axis_dim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  std::vector<int64_t> group_of(static_cast<size_t>(axis_dim));  // run number of each slice, in sorted order
  std::vector<int64_t> group_first, group_count;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || compare(order[r - 1], order[r]) != 0) {
      group_first.push_back(order[r]);
      group_count.push_back(0);
    }
    group_of[static_cast<size_t>(order[r])] = static_cast<int64_t>(group_first.size()) - 1;
    ++group_count.back();
  }
  // Output position of each run: its sorted rank, or its rank by first occurrence.
  std::vector<int64_t> runs(group_first.size());
  std::iota(runs.begin(), runs.end(), 0);
  if (!sorted)
    std::sort(runs.begin(), runs.end(), [&](int64_t a, int64_t b) {
      return group_first[static_cast<size_t>(a)] < group_first[static_cast<size_t>(b)];
    });
  std::vector<int64_t> position(runs.size());
  first_index.resize(runs.size());
  counts.resize(runs.size());
  for (size_t u = 0; u < runs.size(); ++u) {
    const size_t g = static_cast<size_t>(runs[u]);
    position[g] = static_cast<int64_t>(u);
    first_index[u] = group_first[g];
    counts[u] = group_count[g];
  }
  inverse.resize(static_cast<size_t>(axis_dim));
  for (size_t j = 0; j < inverse.size(); ++j) inverse[j] = position[static_cast<size_t>(group_of[j])];
}

#define QT_SCATTER_INSTANTIATE(T)                                                                                    \
  template void scatter_elements<T>(T*, std::span<const int64_t>, const int64_t*, std::span<const int64_t>, const T*, \
                                    int64_t, ScatterReduction);                                                      \
  template void scatter_nd<T>(T*, std::span<const int64_t>, const int64_t*, std::span<const int64_t>, const T*,      \
                              ScatterReduction);                                                                     \
  template void unique_slices<T>(const T*, int64_t, int64_t, int64_t, bool, std::vector<int64_t>&,                   \
                                 std::vector<int64_t>&, std::vector<int64_t>&);
QT_SCATTER_INSTANTIATE(float)
QT_SCATTER_INSTANTIATE(double)
QT_SCATTER_INSTANTIATE(int8_t)
QT_SCATTER_INSTANTIATE(uint8_t)
QT_SCATTER_INSTANTIATE(int16_t)
QT_SCATTER_INSTANTIATE(uint16_t)
QT_SCATTER_INSTANTIATE(int32_t)
QT_SCATTER_INSTANTIATE(uint32_t)
QT_SCATTER_INSTANTIATE(int64_t)
QT_SCATTER_INSTANTIATE(uint64_t)
#undef QT_SCATTER_INSTANTIATE

}  // namespace quant::kernels
