// N-input numpy broadcasting (ONNX docs/Broadcasting.md) as an iterator over
// "runs": stretches of the output along which every input either advances by
// one element or stays on one element. Element-wise kernels write their inner
// loop once per run, so equal shapes and scalar operands cost one run and the
// common bias patterns ([N,C,H,W] + [C,1,1]) cost one run per channel.
// Standard library only; allocates nothing.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

namespace quant::kernels {

// Calls f(offsets, steps, y_offset, n) for every run of the output of shape
// y_shape, where input k is read from offsets[k] + i * steps[k] (steps[k] is 0
// or 1) for i in [0, n), and the output written at y_offset + i.
// Each in_shapes[k] must broadcast to y_shape (callers compute y_shape with
// broadcast_shapes). Nothing is called for an empty output.
template <size_t K, class F>
void for_each_broadcast_run(const std::array<std::span<const int64_t>, K>& in_shapes, std::span<const int64_t> y_shape,
                            F&& f) {
  // Dimensions of extent 1 are dropped and neighbours with the same broadcast
  // pattern merged, so each kept dimension has extent >= 2 and their product
  // fits int64: at most 63 remain, whatever the rank.
  constexpr size_t kMaxDims = 64;
  std::array<int64_t, kMaxDims> extent{};
  std::array<std::array<bool, K>, kMaxDims> bcast{};
  size_t rank = 0;
  const size_t y_rank = y_shape.size();
  for (size_t d = 0; d < y_rank; ++d) {
    const int64_t n = y_shape[d];
    if (n == 0) return;
    if (n == 1) continue;
    std::array<bool, K> pattern{};
    for (size_t k = 0; k < K; ++k) {
      const size_t lead = y_rank - in_shapes[k].size();
      assert(in_shapes[k].size() <= y_rank);
      const int64_t e = d < lead ? 1 : in_shapes[k][d - lead];
      assert(e == 1 || e == n);
      pattern[k] = e == 1;
    }
    if (rank > 0 && bcast[rank - 1] == pattern) {
      extent[rank - 1] *= n;
    } else {
      assert(rank < kMaxDims);
      extent[rank] = n;
      bcast[rank] = pattern;
      ++rank;
    }
  }
  std::array<int64_t, K> offsets{};
  std::array<int64_t, K> steps{};
  if (rank == 0) {  // a single element
    steps.fill(1);
    f(offsets.data(), steps.data(), int64_t{0}, int64_t{1});
    return;
  }
  // Element strides of each kept dimension, innermost first.
  std::array<std::array<int64_t, K>, kMaxDims> stride{};
  std::array<int64_t, kMaxDims> y_stride{};
  std::array<int64_t, K> acc;
  acc.fill(1);
  int64_t y_acc = 1;
  for (size_t d = rank; d-- > 0;) {
    for (size_t k = 0; k < K; ++k) {
      stride[d][k] = bcast[d][k] ? 0 : acc[k];
      if (!bcast[d][k]) acc[k] *= extent[d];
    }
    y_stride[d] = y_acc;
    y_acc *= extent[d];
  }
  const size_t inner = rank - 1;
  const int64_t n = extent[inner];
  for (size_t k = 0; k < K; ++k) steps[k] = stride[inner][k];
  std::array<int64_t, kMaxDims> index{};
  int64_t y_offset = 0;
  for (;;) {
    f(offsets.data(), steps.data(), y_offset, n);
    // Odometer over the outer dimensions.
    size_t d = inner;
    for (;;) {
      if (d == 0) return;
      --d;
      for (size_t k = 0; k < K; ++k) offsets[k] += stride[d][k];
      y_offset += y_stride[d];
      if (++index[d] < extent[d]) break;
      for (size_t k = 0; k < K; ++k) offsets[k] -= stride[d][k] * extent[d];
      y_offset -= y_stride[d] * extent[d];
      index[d] = 0;
    }
  }
}

// y = op(a, b) elementwise with broadcasting; input and output element types
// may differ (comparisons write bool, Pow mixes base and exponent types).
// y may alias an input only when that input has y's shape.
template <class TA, class TB, class TY, class Op>
void broadcast_binary(Op op, const TA* a, std::span<const int64_t> a_shape, const TB* b,
                      std::span<const int64_t> b_shape, TY* y, std::span<const int64_t> y_shape) {
  for_each_broadcast_run<2>({a_shape, b_shape}, y_shape,
                            [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
                              const TA* pa = a + off[0];
                              const TB* pb = b + off[1];
                              TY* py = y + y_off;
                              if (step[0] && step[1]) {
                                for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], pb[i]);
                              } else if (step[0]) {
                                const TB bv = *pb;
                                for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], bv);
                              } else if (step[1]) {
                                const TA av = *pa;
                                for (int64_t i = 0; i < n; ++i) py[i] = op(av, pb[i]);
                              } else {
                                const TY v = op(*pa, *pb);
                                for (int64_t i = 0; i < n; ++i) py[i] = v;
                              }
                            });
}

// y = op(a, b, c) elementwise with broadcasting (Where).
template <class TA, class TB, class TC, class TY, class Op>
void broadcast_ternary(Op op, const TA* a, std::span<const int64_t> a_shape, const TB* b,
                       std::span<const int64_t> b_shape, const TC* c, std::span<const int64_t> c_shape, TY* y,
                       std::span<const int64_t> y_shape) {
  for_each_broadcast_run<3>({a_shape, b_shape, c_shape}, y_shape,
                            [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
                              const TA* pa = a + off[0];
                              const TB* pb = b + off[1];
                              const TC* pc = c + off[2];
                              TY* py = y + y_off;
                              if (step[0] && step[1] && step[2]) {
                                for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], pb[i], pc[i]);
                              } else {
                                for (int64_t i = 0; i < n; ++i)
                                  py[i] = op(pa[i * step[0]], pb[i * step[1]], pc[i * step[2]]);
                              }
                            });
}

// Copies x into y, repeating it along broadcast dimensions (numpy broadcast_to;
// the data movement of ONNX Expand). Any element size.
void broadcast_copy(const void* x, std::span<const int64_t> x_shape, void* y, std::span<const int64_t> y_shape,
                    size_t elem_size);

}  // namespace quant::kernels
