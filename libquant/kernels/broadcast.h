// N-input numpy broadcasting (ONNX docs/Broadcasting.md) as an iterator over
// "runs": stretches of the output along which every input either advances by
// one element or stays on one element. Element-wise kernels write their inner
// loop once per run, so equal shapes and scalar operands cost one run and the
// common bias patterns ([N,C,H,W] + [C,1,1]) cost one run per channel; kernels
// that split the output over threads visit any range of it (BroadcastRuns).
// Standard library only; allocates nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

namespace quant::kernels {

// The runs of a broadcast of K inputs to y_shape: stretches of the output
// along which every input either advances by one element or stays on one.
// Dimensions of extent 1 are dropped and neighbours with the same broadcast
// pattern merged (ONNX Runtime's broadcaster merges them too), so a run is
// the output's trailing dimensions over which each input is read whole or
// held: [N,C,H,W] + [C,1,1] runs H*W per (n, c), equal shapes and scalar
// operands one run. The output is row-major, so the run holding element e
// starts at e - e % run_length(). Each in_shapes[k] must broadcast to
// y_shape (callers compute y_shape with broadcast_shapes).
template <size_t K>
class BroadcastRuns {
 public:
  BroadcastRuns(const std::array<std::span<const int64_t>, K>& in_shapes, std::span<const int64_t> y_shape) {
    std::array<std::array<bool, K>, kMaxDims> bcast{};
    size_t rank = 0;
    const size_t y_rank = y_shape.size();
    for (size_t d = 0; d < y_rank; ++d) {
      const int64_t n = y_shape[d];
      if (n == 0) return;  // no element: size() 0
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
        extent_[rank - 1] *= n;
      } else {
        assert(rank < kMaxDims);
        extent_[rank] = n;
        bcast[rank] = pattern;
        ++rank;
      }
    }
    size_ = 1;
    if (rank == 0) {  // a single element
      steps_.fill(1);
      return;
    }
    // Element strides of each kept dimension, innermost first.
    std::array<int64_t, K> acc;
    acc.fill(1);
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < K; ++k) {
        stride_[d][k] = bcast[d][k] ? 0 : acc[k];
        if (!bcast[d][k]) acc[k] *= extent_[d];
      }
      size_ *= extent_[d];
    }
    outer_ = rank - 1;
    run_ = extent_[outer_];
    steps_ = stride_[outer_];
  }

  int64_t size() const { return size_; }       // output elements
  int64_t run_length() const { return run_; }  // elements per run

  // Calls f(offsets, steps, y_offset, n) for the output elements [first,
  // first + count), run by run in order (the first and last possibly part
  // of a run): input k is read from offsets[k] + i * steps[k] (steps[k] is
  // 0 or 1) for i in [0, n), the output written at y_offset + i.
  template <class F>
  void visit(int64_t first, int64_t count, F&& f) const {
    assert(first >= 0 && count >= 0 && first + count <= size_);
    if (count == 0) return;
    // The run holding `first`, as an index over the outer dimensions.
    std::array<int64_t, kMaxDims> index{};
    std::array<int64_t, K> offsets{};
    int64_t r = first / run_, skip = first % run_;
    for (size_t d = outer_; d-- > 0;) {
      index[d] = r % extent_[d];
      r /= extent_[d];
      for (size_t k = 0; k < K; ++k) offsets[k] += index[d] * stride_[d][k];
    }
    for (int64_t y = first;;) {
      const int64_t n = std::min(run_ - skip, count);
      std::array<int64_t, K> at;
      for (size_t k = 0; k < K; ++k) at[k] = offsets[k] + skip * steps_[k];
      f(at.data(), steps_.data(), y, n);
      count -= n;
      if (count == 0) return;
      y += n;
      skip = 0;
      // Odometer over the outer dimensions (another run follows, so one advances).
      for (size_t d = outer_;;) {
        assert(d > 0);
        --d;
        for (size_t k = 0; k < K; ++k) offsets[k] += stride_[d][k];
        if (++index[d] < extent_[d]) break;
        for (size_t k = 0; k < K; ++k) offsets[k] -= stride_[d][k] * extent_[d];
        index[d] = 0;
      }
    }
  }

 private:
  // Each kept dimension has extent >= 2 and their product fits int64: at
  // most 63 remain, whatever the rank.
  static constexpr size_t kMaxDims = 64;
  std::array<int64_t, kMaxDims> extent_{};
  std::array<std::array<int64_t, K>, kMaxDims> stride_{};
  size_t outer_ = 0;  // kept dimensions before the run's
  int64_t size_ = 0, run_ = 1;
  std::array<int64_t, K> steps_{};
};

// Calls f(offsets, steps, y_offset, n) for every run of the output of shape
// y_shape (BroadcastRuns), in order. Nothing is called for an empty output.
template <size_t K, class F>
void for_each_broadcast_run(const std::array<std::span<const int64_t>, K>& in_shapes, std::span<const int64_t> y_shape,
                            F&& f) {
  const BroadcastRuns<K> runs(in_shapes, y_shape);
  runs.visit(0, runs.size(), f);
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
