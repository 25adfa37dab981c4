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
  // Trailing axes the permutation leaves in place are one element of their
  // combined bytes: ShuffleNet's channel shuffle, [1, 2, 58, 28, 28] by
  // (0, 2, 1, 3, 4), copies 116 planes of 784 floats rather than 3248 rows
  // of 28.
  size_t kept = perm.size();
  int64_t inner = 1;
  while (kept > 0 && perm[kept - 1] == static_cast<int64_t>(kept - 1)) inner *= shape[--kept];
  const size_t folded = elem_size * static_cast<size_t>(inner);
  const TransposeArgs t{shape.first(kept), perm.first(kept), folded, pick_copy(folded)};
  transpose_rec(t, 0, static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y), count / inner);
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

namespace {

struct RemapArgs {
  std::span<const Dims> maps;
  Dims x_strides;  // in bytes
  Dims y_blocks;   // bytes of one output sub-tensor below each axis
  size_t elem_size;  // bytes of one element of the last map (whole trailing axes folded in)
  const unsigned char* fill;
  size_t fill_size;  // bytes of the tensor's own element, the fill's
  bool last_is_run;  // the last map is one run of consecutive indices
};

void fill_block(unsigned char* y, int64_t bytes, const unsigned char* fill, size_t fill_size) {
  for (int64_t b = 0; b < bytes; b += static_cast<int64_t>(fill_size)) std::memcpy(y + b, fill, fill_size);
}

void remap_rec(const RemapArgs& a, size_t d, const unsigned char* x, unsigned char* y) {
  const Dims& map = a.maps[d];
  const int64_t n = static_cast<int64_t>(map.size());
  if (d + 1 == a.maps.size()) {
    if (a.last_is_run) {
      std::memcpy(y, x + map[0] * a.x_strides[d], static_cast<size_t>(n) * a.elem_size);
      return;
    }
    for (int64_t o = 0; o < n; ++o) {
      unsigned char* dst = y + o * static_cast<int64_t>(a.elem_size);
      if (map[static_cast<size_t>(o)] < 0) fill_block(dst, static_cast<int64_t>(a.elem_size), a.fill, a.fill_size);
      else std::memcpy(dst, x + map[static_cast<size_t>(o)] * a.x_strides[d], a.elem_size);
    }
    return;
  }
  for (int64_t o = 0; o < n; ++o) {
    unsigned char* dst = y + o * a.y_blocks[d];
    const int64_t i = map[static_cast<size_t>(o)];
    if (i < 0) fill_block(dst, a.y_blocks[d], a.fill, a.fill_size);
    else remap_rec(a, d + 1, x + i * a.x_strides[d], dst);
  }
}

}  // namespace

void remap_axes(const void* x, size_t elem_size, std::span<const int64_t> x_shape, std::span<const Dims> maps,
                const void* fill, void* y) {
  assert(maps.size() == x_shape.size());
  const size_t rank = maps.size();
  int64_t count = 1;
  for (const Dims& m : maps) count *= static_cast<int64_t>(m.size());
  if (count == 0) return;
  if (rank == 0) {
    std::memcpy(y, x, elem_size);
    return;
  }
  // Trailing axes taken whole and in order (0, 1, ..., dim - 1) are one
  // element of their combined bytes: a Slice of channels [1, 116, 28, 28]
  // -> [1, 58, 28, 28] copies one run instead of 1624 rows of 28 (the
  // ShuffleNet channel split: 4.4 -> 1.5 us per Slice at 28 x 28, in the
  // model, 1 thread, planned output included). One axis stays,
  // so the recursion has a last map.
  const size_t fill_size = elem_size;
  size_t kept = rank;
  while (kept > 1) {
    const Dims& m = maps[kept - 1];
    bool whole = static_cast<int64_t>(m.size()) == x_shape[kept - 1];
    for (size_t o = 0; whole && o < m.size(); ++o) whole = m[o] == static_cast<int64_t>(o);
    if (!whole) break;
    elem_size *= m.size();
    --kept;
  }
  maps = maps.first(kept);
  RemapArgs a{maps, Dims(kept), Dims(kept), elem_size, static_cast<const unsigned char*>(fill), fill_size, true};
  int64_t xs = static_cast<int64_t>(elem_size), ys = static_cast<int64_t>(elem_size);
  for (size_t d = kept; d-- > 0;) {
    a.x_strides[d] = xs;
    a.y_blocks[d] = ys;
    xs *= x_shape[d];
    ys *= static_cast<int64_t>(maps[d].size());
  }
  const Dims& last = maps[kept - 1];
  for (size_t o = 0; o < last.size(); ++o) {
    assert(last[o] < x_shape[kept - 1]);
    if (last[o] < 0 || last[o] != last[0] + static_cast<int64_t>(o)) a.last_is_run = false;
  }
  remap_rec(a, 0, static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y));
}

void reverse_sequence(const void* x, size_t elem_size, int64_t time, int64_t batch, int64_t inner, bool time_major,
                      const int64_t* seq_lens, void* y) {
  const size_t row = static_cast<size_t>(inner) * elem_size;
  auto offset = [&](int64_t t, int64_t b) {
    return static_cast<size_t>(time_major ? t * batch + b : b * time + t) * row;
  };
  const unsigned char* src = static_cast<const unsigned char*>(x);
  unsigned char* dst = static_cast<unsigned char*>(y);
  if (row == 0) return;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = seq_lens[b];
    assert(len >= 0 && len <= time);
    for (int64_t t = 0; t < time; ++t) {
      const int64_t from = t < len ? len - 1 - t : t;
      std::memcpy(dst + offset(t, b), src + offset(from, b), row);
    }
  }
}

}  // namespace quant::kernels
