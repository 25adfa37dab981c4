// QDQ insertion: turns a float graph plus an activation profile into a
// quantized graph in the QDQ form (DESIGN "Output models").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "libquant/calib/params.h"
#include "libquant/calib/range.h"
#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/profile.h"

namespace quant::passes {

struct QuantizeOptions {
  calib::Schema schema = calib::Schema::Asymmetric;
  DType activations = DType::UInt8;
  DType weights = DType::Int8;
  bool per_channel = true;
  std::string calibration = "minmax";
  // Overrides of the default choice of quantized ops (qconvert --exclude-node,
  // --exclude-op, --include-op). Exclusion wins over inclusion.
  std::set<std::string> exclude_nodes;
  std::set<std::string> exclude_ops;
  std::set<std::string> include_ops;
};

// The op types quantized by default: those whose integer form keeps accuracy.
const std::set<std::string>& default_quantized_ops();

// Why each node and tensor ended up as it did; qconvert --report writes it.
struct NodeDecision {
  std::string node;
  std::string op_type;
  bool quantized = false;
  std::string reason;
};

struct TensorDecision {
  std::string tensor;
  std::string kind;  // "activation", "weight" or "bias"
  std::string method;
  calib::Range range{0, 0};
  QuantParams params;
};

struct QuantizeReport {
  std::vector<NodeDecision> nodes;
  std::vector<TensorDecision> tensors;
  std::vector<std::string> notes;  // graph rewrites: folds, fallbacks
};

// Inserts QuantizeLinear/DequantizeLinear pairs on the float activations that
// quantizable nodes read and write, integer weights (+ DequantizeLinear) and
// int32 biases at scale s_in * s_w. Float activation names stay the names of
// the float tensors, so a quantized tensor pairs with its float twin by name.
Expected<QuantizeReport> insert_qdq(ir::Graph& graph, const profile::Profile& profile, const QuantizeOptions& options);

}  // namespace quant::passes
