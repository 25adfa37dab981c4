// QDQ insertion: turns a float graph plus an activation profile into a
// quantized graph in the QDQ form (DESIGN "Output models").
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libquant/calib/params.h"
#include "libquant/calib/range.h"
#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/opset_upgrade.h"
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
  // From the target (DESIGN "Targets"; apps copy a TargetSpec's fields here).
  // Empty sets keep qconvert's built-in lists.
  std::set<std::string> quantized_ops;        // op types quantized (default_quantized_ops())
  std::set<std::string> shares_input_params;  // outputs that keep their input's parameters
  struct FixedParams {
    float scale = 1;
    int32_t zero_point = 0;
  };
  std::map<std::string, FixedParams> fixed_output_params;  // op type -> its output's parameters
  std::map<std::string, bool> per_channel_by_op;          // op type -> per channel, overriding per_channel
  DType depthwise_weights = DType::Undefined;  // depthwise Conv weights' type; Undefined: `weights`
  int32_t weight_max = 0;         // symmetric weights scaled to [-weight_max, weight_max]; 0: the type's own
  int32_t weight_pair_bound = 0;  // int8 weights: |w[2j]| + |w[2j+1]| <= bound in ONNX Runtime's K order; 0: none
  // The backend rules of target/target.h's TargetSpec, same meanings.
  std::string target;                  // its name, for the report's reasons
  std::set<std::string> same_params;   // ops whose inputs and output share one set of parameters
  std::string placement = "all";       // "all" or "inputs"
  DType matmul_b_type = DType::Undefined;
  calib::Schema matmul_b_schema = calib::Schema::Symmetric;
  std::map<std::string, int> weight_inputs;  // op type -> input quantized as a per-tensor weight
  int32_t first_layer_weight_max = 0;        // weights of ops reading a graph input: [-m, m]; 0: weight_max
  DType bias = DType::Int32;                 // Int64: int32 where it fits, else float (no int64 DequantizeLinear); Float32: float
  // Mixed precision (qconvert's accuracy search moving layers to 16 bits):
  // every activation these nodes read or write takes `wide_activations`
  // (same schema) instead of `activations`, and so does every tensor sharing
  // parameters with one of them (a Concat's group). Weights keep their type.
  std::set<std::string> wide_nodes;
  DType wide_activations = DType::Undefined;
};

// The op types quantized by default: those whose integer form keeps accuracy.
const std::set<std::string>& default_quantized_ops();

// Why each node and tensor ended up as it did; qconvert --report writes it.
struct NodeDecision {
  std::string node;
  std::string op_type;
  bool quantized = false;
  std::string reason;
  // Bytes of the float weights the node reads (float_weight_bytes), each
  // constant counted at its first reader: quantized with the node when
  // `quantized`, else kept float for `reason`. A static conversion counts a
  // weight reached through folded shape ops (shape_fold.h) at the op that
  // reads it, and the other float constants of a quantized node, which stay
  // float (an Add's table), in `float_bytes`. qconvert's weight coverage.
  int64_t weight_bytes = 0;
  int64_t float_bytes = 0;
};

// Bytes of input i of n as a float weight: a constant float32 tensor of rank
// >= 2 (of RNN/GRU/LSTM only W and R); 0 for anything else.
int64_t float_weight_bytes(const ir::Node& n, size_t i);

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

// How much of the float weights a conversion quantized, from its report's
// NodeDecision::weight_bytes and float_bytes; the rest by reason ("<op>: <reason>").
struct WeightCoverage {
  int64_t total = 0, quantized = 0;
  std::map<std::string, int64_t> float_by_reason;
  double fraction() const { return total ? static_cast<double>(quantized) / static_cast<double>(total) : 1.0; }
};
WeightCoverage weight_coverage(const QuantizeReport& report);

// QuantizeLinear/DequantizeLinear need opset 10; per-channel weights need
// DequantizeLinear-13's axis (below 13 they are written per tensor).
OpsetNeed qdq_opset_need(const QuantizeOptions& options);

// Inserts QuantizeLinear/DequantizeLinear pairs on the float activations that
// quantizable nodes read and write, integer weights (+ DequantizeLinear) and
// int32 biases at scale s_in * s_w. Float activation names stay the names of
// the float tensors, so a quantized tensor pairs with its float twin by name.
Expected<QuantizeReport> insert_qdq(ir::Graph& graph, const profile::Profile& profile, const QuantizeOptions& options);

}  // namespace quant::passes
