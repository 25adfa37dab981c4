// The K order in which ONNX Runtime's x86 u8 x s8 kernels pair weights
// (kernels/qdot_sat16.h), for the weight of a Conv, MatMul or Gemm as the node
// consumes it: shared by the pair bound (qdq.cpp) and the saturation check
// (saturation_risk.h).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstdint>

#include "libquant/calib/pair_bound.h"
#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// The flat index of element k (in ONNX Runtime's K order, kernels/qdot_sat16.h)
// of output column `col` of a weight as `node` consumes it, for the ops its
// u8 x s8 kernels run: Conv [M, C/g, taps] (taps major, channels minor),
// MatMul [..., K, N] (one column per batch and n), Gemm [K, N] or [N, K].
// Returns false for other ops and for depthwise convolutions, which ONNX
// Runtime multiplies in 16 bits (nothing to pair).
struct KOrder {
  int64_t columns = 0, k = 0, n = 0, channels = 0, taps = 0;
  enum { Conv, KxN, NxK } layout = KxN;
  int64_t index(int64_t col, int64_t j) const {
    switch (layout) {
      case Conv: return col * k + (j % channels) * taps + j / channels;
      case KxN: return (col / n) * k * n + j * n + col % n;
      case NxK: return col * k + j;
    }
    return 0;
  }
  int64_t channel(int64_t col) const { return layout == KxN ? col % n : col; }
  // A [K, N] matrix (MatMul, MatMulInteger): one column per n.
  static KOrder matrix(int64_t k, int64_t n) {
    KOrder o;
    o.layout = KxN, o.k = k, o.n = n, o.columns = n;
    return o;
  }
};

// A depthwise convolution's weight as `node` (a Conv or QLinearConv) reads
// it: [M, 1, taps...] with group = M. ONNX Runtime multiplies these in 16
// bits, so they never saturate, and targets may type them apart.
inline bool depthwise_weight(const ir::Node& node, const Tensor& w) {
  return w.rank() >= 3 && w.dim(1) == 1 && node.attr_int("group", 1) == w.dim(0);
}

inline bool k_order(const ir::Node& node, const Tensor& w, KOrder& o) {
  if (node.op_type == "Conv" && w.rank() >= 3) {
    if (depthwise_weight(node, w)) return false;
    o.layout = KOrder::Conv, o.columns = w.dim(0), o.channels = w.dim(1), o.k = w.size() / std::max<int64_t>(w.dim(0), 1);
    o.taps = o.k / std::max<int64_t>(o.channels, 1);
    return true;
  }
  if ((node.op_type == "MatMul" || node.op_type == "Gemm") && w.rank() >= 2) {
    const bool nxk = node.op_type == "Gemm" && node.attr_int("transB", 0) != 0;
    o.layout = nxk ? KOrder::NxK : KOrder::KxN;
    o.k = nxk ? w.dim(1) : w.dim(w.rank() - 2);
    o.n = nxk ? w.dim(0) : w.dim(w.rank() - 1);
    o.columns = nxk ? o.n : w.size() / std::max<int64_t>(o.k, 1);
    return node.op_type == "MatMul" || w.rank() == 2;
  }
  return false;
}

// Applies a target's pair bound to the int8 weights q (quantized from the
// float32 w with p; per-channel scales along the output columns) in order o,
// each pair over the bound moved to the nearest pair inside it
// (calib/pair_bound.h); returns how many pairs changed.
inline int64_t bound_weight_pairs(const KOrder& o, const Tensor& w, const QuantParams& p, int32_t bound, Tensor& q) {
  int8_t* qd = q.data<int8_t>();
  const float* wd = w.data<float>();
  int64_t changed = 0;
  for (int64_t col = 0; col < o.columns; ++col) {
    const double scale = p.scale[p.per_tensor() ? 0 : static_cast<size_t>(o.channel(col))];
    for (int64_t j = 0; j + 1 < o.k; j += 2) {
      const int64_t i0 = o.index(col, j), i1 = o.index(col, j + 1);
      if (std::abs(qd[i0]) + std::abs(qd[i1]) <= bound) continue;
      auto [t0, t1] = calib::nearest_bounded_pair(wd[i0] / scale, wd[i1] / scale, bound);
      qd[i0] = t0, qd[i1] = t1;
      ++changed;
    }
  }
  return changed;
}

}  // namespace quant::passes
