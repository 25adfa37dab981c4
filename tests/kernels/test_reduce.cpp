// kernels::reduce (which merges axes and walks slices) against a naive
// per-element accumulation, over every subset of axes of several shapes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "libquant/kernels/reduce.h"

using quant::kernels::ReduceOp;

namespace {

// Sum and max by visiting every input element and computing its output index.
void naive_sum_max(const std::vector<double>& x, const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                   std::vector<double>& sum, std::vector<double>& max) {
  int64_t out_n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d]) out_n *= shape[d];
  sum.assign(static_cast<size_t>(out_n), 0.0);
  max.assign(static_cast<size_t>(out_n), -INFINITY);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) o = o * shape[d] + idx[d];
    sum[static_cast<size_t>(o)] += x[e];
    max[static_cast<size_t>(o)] = std::max(max[static_cast<size_t>(o)], x[e]);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

TEST_CASE("reduce matches a naive reduction for every axis subset", "[kernels][reduce]") {
  const std::vector<std::vector<int64_t>> shapes = {{5}, {2, 3}, {3, 1, 4}, {2, 3, 2, 2}, {1, 4, 1, 3}};
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = std::sin(static_cast<double>(i) * 1.7) * 10;
    for (unsigned mask = 0; mask < (1u << shape.size()); ++mask) {
      std::vector<bool> reduced(shape.size());
      bool flags[8] = {};
      for (size_t d = 0; d < shape.size(); ++d) flags[d] = reduced[d] = (mask >> d) & 1;
      std::vector<double> want_sum, want_max;
      naive_sum_max(x, shape, reduced, want_sum, want_max);
      std::vector<double> sum(want_sum.size()), max(want_sum.size());
      quant::kernels::reduce<double>(ReduceOp::Sum, x.data(), shape, std::span<const bool>(flags, shape.size()), sum.data());
      quant::kernels::reduce<double>(ReduceOp::Max, x.data(), shape, std::span<const bool>(flags, shape.size()), max.data());
      INFO("rank " << shape.size() << " mask " << mask);
      for (size_t i = 0; i < sum.size(); ++i) {
        CHECK(sum[i] == Approx(want_sum[i]));
        CHECK(max[i] == want_max[i]);
      }
    }
  }
}

// Sum and Mean over trailing axes run eight outputs side by side: each
// output's double sum must still be added in element order, the same bits as
// one output at a time (float32 here, whose rounding shows any reordering).
TEST_CASE("reduce: sums over trailing axes keep each output's order of adds", "[kernels][reduce]") {
  const std::vector<int64_t> shape = {1, 19, 7, 7};  // 19 outputs: two runs of eight and three alone
  std::vector<float> x(19 * 49);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(static_cast<double>(i) * 0.37) * std::pow(10.0, i % 9));
  const bool flags[4] = {false, false, true, true};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
    std::vector<float> got(19);
    quant::kernels::reduce<float>(op, x.data(), shape, std::span<const bool>(flags, 4), got.data());
    for (size_t o = 0; o < 19; ++o) {
      double acc = 0;
      for (size_t i = 0; i < 49; ++i) acc += static_cast<double>(x[o * 49 + i]);
      const float want = op == ReduceOp::Sum ? static_cast<float>(acc) : static_cast<float>(acc / 49.0);
      INFO("output " << o);
      CHECK(std::memcmp(&got[o], &want, sizeof(float)) == 0);
    }
  }
}
