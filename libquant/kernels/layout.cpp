#include "libquant/kernels/layout.h"

#include <cassert>
#include <cstring>

namespace quant::kernels {
namespace {

// Input stride (in elements) of input dimension `axis`.
int64_t input_stride(std::span<const int64_t> shape, size_t axis) {
  int64_t s = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) s *= shape[i];
  return s;
}

// Copies elements of a fixed byte size; the size is a template parameter for
// the common widths so that memcpy becomes one load and one store.
template <size_t Size>
void copy_strided(const unsigned char* x, int64_t x_stride, unsigned char* y, int64_t n, size_t elem_size) {
  const size_t size = Size != 0 ? Size : elem_size;
  for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * size, x + i * x_stride * size, size);
}

using CopyFn = void (*)(const unsigned char*, int64_t, unsigned char*, int64_t, size_t);

CopyFn pick_copy(size_t elem_size) {
  switch (elem_size) {
    case 1:
      return copy_strided<1>;
    case 2:
      return copy_strided<2>;
    case 4:
      return copy_strided<4>;
    case 8:
      return copy_strided<8>;
    default:
      return copy_strided<0>;
  }
}

struct TransposeArgs {
  std::span<const int64_t> shape, perm;
  size_t elem_size;
  CopyFn copy;
};

// Writes the output sub-tensor of output dims d.. starting at y (contiguous),
// reading from x. y_block is the element count of that sub-tensor.
void transpose_rec(const TransposeArgs& t, size_t d, const unsigned char* x, unsigned char* y, int64_t y_block) {
  const size_t axis = static_cast<size_t>(t.perm[d]);
  const int64_t n = t.shape[axis];
  const int64_t x_stride = input_stride(t.shape, axis);
  if (d + 1 == t.perm.size()) {
    if (x_stride == 1) {
      std::memcpy(y, x, static_cast<size_t>(n) * t.elem_size);
    } else {
      t.copy(x, x_stride, y, n, t.elem_size);
    }
    return;
  }
  const int64_t y_sub = y_block / n;
  for (int64_t i = 0; i < n; ++i) {
    transpose_rec(t, d + 1, x + i * x_stride * static_cast<int64_t>(t.elem_size),
                  y + i * y_sub * static_cast<int64_t>(t.elem_size), y_sub);
  }
}

}  // namespace

void transpose(const void* x, size_t elem_size, std::span<const int64_t> shape, std::span<const int64_t> perm,
               void* y) {
  assert(perm.size() == shape.size());
  const int64_t count = element_count(shape);
  if (count == 0) return;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) {  // also covers rank 0
    std::memcpy(y, x, static_cast<size_t>(count) * elem_size);
    return;
  }
  const TransposeArgs t{shape, perm, elem_size, pick_copy(elem_size)};
  transpose_rec(t, 0, static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y), count);
}

void concat(std::span<const void* const> inputs, std::span<const Dims> shapes, int64_t axis, size_t elem_size,
            void* y) {
  assert(inputs.size() == shapes.size() && !shapes.empty());
  const int64_t rank = static_cast<int64_t>(shapes[0].size());
  if (axis < 0) axis += rank;
  assert(axis >= 0 && axis < rank);
  // Row-major: every input is `outer` chunks of dims[axis] * inner elements.
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shapes[0][static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= shapes[0][static_cast<size_t>(i)];
  unsigned char* out = static_cast<unsigned char*>(y);
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      assert(static_cast<int64_t>(shapes[k].size()) == rank);
      const size_t chunk = static_cast<size_t>(shapes[k][static_cast<size_t>(axis)] * inner) * elem_size;
      if (chunk == 0) continue;  // memcpy with a null pointer is undefined even for 0 bytes
      std::memcpy(out, static_cast<const unsigned char*>(inputs[k]) + static_cast<size_t>(o) * chunk, chunk);
      out += chunk;
    }
  }
}

}  // namespace quant::kernels
