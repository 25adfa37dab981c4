// Checking an already quantized model against a target's rules (qconvert
// --check-target, DESIGN "Targets"): the model may come from any tool (qtool,
// ONNX Runtime's quantize_static, ...), in QDQ form (QuantizeLinear /
// DequantizeLinear, domain "" or com.microsoft) or QOperator form
// (QLinearConv, QLinearMatMul, com.microsoft QGemm and QLinear* ops: their
// types, weights and zero points). Each violation names the node, the tensor
// and the rule by its dotted path in the target file
// ("quantize.weights.range"), with what the model has and what the rule wants.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libquant/ir/graph.h"
#include "libquant/target/target.h"

namespace quant::target {

struct Violation {
  std::string node;     // the node's name
  std::string op_type;
  std::string tensor;   // the tensor the rule is about
  std::string rule;     // its path in the target file: "quantize.fixed_output_params.Sigmoid"
  std::string found;
  std::string expected;
};

struct CheckResult {
  std::vector<Violation> violations;
  // What could not be checked and why (a scale computed at run time,
  // dynamic quantization, ...): not violations.
  std::vector<std::string> notes;
  // How much was looked at: "nodes", "activations" (quantized activation
  // tensors), "weights", "biases".
  std::map<std::string, int64_t> checked;
};

// Every violation of `target`'s "quantize" rules in `graph`, in node order.
CheckResult check_model(const ir::Graph& graph, const TargetSpec& target);

// "conv1 (Conv) w_quantized: quantize.weights.type: found uint8, expected int8"
std::string describe(const Violation& v);

// qconvert --check-target --json: {"target", "model", "violations": [{"node",
// "op_type", "tensor", "rule", "found", "expected"}], "notes", "checked"}.
std::string check_json(const CheckResult& result, const std::string& target_name, const std::string& model);

}  // namespace quant::target
