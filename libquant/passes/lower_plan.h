// The execution plan of a (lowered) quantized graph as `qrun --explain` shows
// it: which nodes run as integer ops, which stay float and why, every Q/DQ
// boundary, and the float islands where int8 leaves the integer domain and
// re-enters it ("quantization boundary break").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "libquant/ir/graph.h"
#include "libquant/passes/lower_qdq.h"

namespace quant::passes {

struct PlanIntegerOp {
  std::string node;
  std::string op;      // "QLinearConv", "com.microsoft.QLinearAdd", ...
  std::string detail;  // what it was lowered from, or "integer in the model"
};

struct PlanBoundary {
  std::string node;
  bool quantize = true;  // float -> integer (QuantizeLinear); false: integer -> float
  std::string from, to;  // tensor names
  std::string params;    // "uint8 scale 0.0123 zero point 0", "dynamic", "int8 per-axis (16)"
};

struct PlanIsland {
  std::vector<std::string> nodes;    // "Softmax node 'sm'"
  std::vector<std::string> reasons;  // one per node
  std::vector<std::string> entries;  // DequantizeLinear nodes feeding it
  std::vector<std::string> exits;    // QuantizeLinear nodes reading it
  bool from_graph_input = false;
  bool to_graph_output = false;
  // Integer data leaves (DQ) into this island and re-enters (Q) after it.
  bool boundary_break() const { return !entries.empty() && !exits.empty(); }
};

struct LoweringPlan {
  bool lowered = false;
  std::vector<PlanIntegerOp> integer_ops;
  std::vector<PlanBoundary> boundaries;
  std::vector<PlanIsland> islands;
  int constant_dequantize = 0;  // DQ of constant weights (folded once at prepare time)
  int boundary_breaks() const;
  int float_ops() const;
};

// `lowering` is the result of lower_qdq on `graph`, or null when the graph
// runs as it is (qrun --no-lower).
LoweringPlan describe_plan(const ir::Graph& graph, const Lowering* lowering);

std::string plan_to_text(const LoweringPlan& plan);
nlohmann::json plan_to_json(const LoweringPlan& plan);

}  // namespace quant::passes
