#include "libquant/passes/lower_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

namespace quant::passes {
namespace {

bool is_quantize(const ir::Node& n) { return n.op_type == "QuantizeLinear" || n.op_type == "DynamicQuantizeLinear"; }
bool is_dequantize(const ir::Node& n) { return n.op_type == "DequantizeLinear"; }

// Operators that compute on integer tensors whatever their inputs look like.
bool is_integer_op(const ir::Node& n) {
  static const std::set<std::string> kOps = {"QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "QGemm",
                                             "QLinearLookup"};
  return kOps.count(n.op_type) || n.op_type.starts_with("QLinear");
}

// Whether an integer op's output is float (QGemm without y_scale, *ToFloat).
bool writes_float(const ir::Node& n) {
  if (n.op_type == "QGemm") return n.inputs.size() < 8 || !n.inputs[7];
  return n.op_type.ends_with("ToFloat");
}

std::string format_params(const ir::Node& n) {
  if (n.op_type == "DynamicQuantizeLinear") return "uint8, parameters computed per run";
  const Tensor* s = ir::constant_data(n.input(1));
  const Tensor* z = ir::constant_data(n.input(2));
  const DType t = z ? z->dtype() : DType::UInt8;
  std::string out(dtype_name(t));
  if (!s) return out + ", parameters not constant";
  if (s->size() != 1) return out + ", per-axis (" + std::to_string(s->size()) + " scales)";
  char buf[96];
  std::snprintf(buf, sizeof buf, ", scale %.6g, zero point %lld", s->as_double(0),
                static_cast<long long>(z && z->size() == 1 ? z->as_int64(0) : 0));
  return out + buf;
}

std::string qualified(const ir::Node& n) { return (n.domain.empty() ? "" : n.domain + ".") + n.op_type; }

}  // namespace

int LoweringPlan::boundary_breaks() const {
  int n = 0;
  for (const auto& i : islands) n += i.boundary_break();
  return n;
}

int LoweringPlan::float_ops() const {
  size_t n = 0;
  for (const auto& i : islands) n += i.nodes.size();
  return static_cast<int>(n);
}

LoweringPlan describe_plan(const ir::Graph& graph, const Lowering* lowering) {
  LoweringPlan plan;
  plan.lowered = lowering != nullptr;
  auto order_or = graph.topological_order();
  if (!order_or) return plan;
  const auto& order = *order_or;
  std::set<const ir::Value*> integer;  // values holding integer data
  std::vector<const ir::Node*> float_nodes;
  for (const ir::Node* n : order) {
    if (n->op_type == "Constant") continue;
    if (is_quantize(*n)) {
      for (const ir::Value* v : n->outputs) integer.insert(v);
      plan.boundaries.push_back({n->name, true, n->input(0) ? n->input(0)->name() : "", n->outputs[0] ? n->outputs[0]->name() : "",
                                 format_params(*n)});
      continue;
    }
    if (is_dequantize(*n)) {
      if (ir::constant_data(n->input(0))) {
        ++plan.constant_dequantize;
        continue;
      }
      plan.boundaries.push_back({n->name, false, n->input(0) ? n->input(0)->name() : "",
                                 n->outputs.empty() || !n->outputs[0] ? "" : n->outputs[0]->name(), format_params(*n)});
      continue;
    }
    // Integer data flows through integer ops and ops that move it; Shape of
    // an integer tensor reads no data and writes none that is quantized.
    const bool moves_integer = n->input(0) && integer.count(n->input(0)) && (moves_data_only(*n) || n->op_type == "Clip");
    const bool lowered_here = lowering && lowering->lowered.count(n->name);
    if (is_integer_op(*n) || moves_integer || lowered_here) {
      std::string detail = "integer in the model";
      if (lowering) {
        auto it = lowering->lowered.find(n->name);
        if (it != lowering->lowered.end()) detail = "lowered: " + it->second;
      }
      plan.integer_ops.push_back({n->name, qualified(*n), detail});
      if ((is_integer_op(*n) || moves_integer) && !writes_float(*n))
        for (const ir::Value* v : n->outputs)
          if (v && v->dtype != DType::Float32) integer.insert(v);
      continue;
    }
    float_nodes.push_back(n);
  }

  // Islands: float nodes connected through float tensors.
  std::map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < float_nodes.size(); ++i) index[float_nodes[i]] = i;
  std::vector<size_t> parent(float_nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t i = 0; i < float_nodes.size(); ++i)
    for (const ir::Value* v : float_nodes[i]->inputs) {
      auto it = v && v->producer ? index.find(v->producer) : index.end();
      if (it != index.end()) parent[find(i)] = find(it->second);
    }
  std::map<size_t, size_t> island_of_root;
  for (size_t i = 0; i < float_nodes.size(); ++i) {
    const ir::Node* n = float_nodes[i];
    auto [it, fresh] = island_of_root.try_emplace(find(i), plan.islands.size());
    if (fresh) plan.islands.emplace_back();
    PlanIsland& island = plan.islands[it->second];
    island.nodes.push_back(n->describe());
    std::string reason = "runs as in the model (--no-lower)";
    if (lowering) {
      auto r = lowering->float_reasons.find(n->name);
      reason = r != lowering->float_reasons.end() ? r->second : "no integer form";
    }
    island.reasons.push_back(reason);
    for (const ir::Value* v : n->inputs) {
      if (!v) continue;
      if (v->producer && is_dequantize(*v->producer) && !ir::constant_data(v->producer->input(0))) {
        if (std::find(island.entries.begin(), island.entries.end(), v->producer->name) == island.entries.end())
          island.entries.push_back(v->producer->name);
      }
      if (std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end()) island.from_graph_input = true;
    }
    for (const ir::Value* v : n->outputs) {
      if (!v) continue;
      if (graph.is_graph_output(v)) island.to_graph_output = true;
      for (const ir::Node* c : graph.consumers(v))
        if (is_quantize(*c) && std::find(island.exits.begin(), island.exits.end(), c->name) == island.exits.end())
          island.exits.push_back(c->name);
    }
  }
  return plan;
}

std::string plan_to_text(const LoweringPlan& plan) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (plan.integer_ops.empty() && plan.boundaries.empty()) {
    line("plan: float model, " + std::to_string(plan.float_ops()) + " float ops, no quantized tensors to lower");
    return out;
  }
  line(std::string("plan (") + (plan.lowered ? "lowered to integer kernels" : "not lowered: Q/DQ run in float") + "): " +
       std::to_string(plan.integer_ops.size()) + " integer ops, " + std::to_string(plan.float_ops()) + " float ops in " +
       std::to_string(plan.islands.size()) + " islands, " + std::to_string(plan.boundaries.size()) + " Q/DQ boundaries, " +
       std::to_string(plan.boundary_breaks()) + " quantization boundary breaks");
  if (!plan.integer_ops.empty()) line("integer ops:");
  for (const auto& op : plan.integer_ops) line("  " + op.op + " node '" + op.node + "': " + op.detail);
  if (!plan.boundaries.empty()) line("Q/DQ boundaries:");
  for (const auto& b : plan.boundaries)
    line(std::string("  ") + (b.quantize ? "quantize   float -> int: '" : "dequantize int -> float: '") + b.from + "' -> '" +
         b.to + "' (" + b.params + ") node '" + b.node + "'");
  if (plan.constant_dequantize)
    line("constant weights dequantized once at prepare time (read by float ops): " + std::to_string(plan.constant_dequantize));
  for (size_t i = 0; i < plan.islands.size(); ++i) {
    const PlanIsland& is = plan.islands[i];
    std::string what;
    if (is.boundary_break()) {
      what = "quantization boundary break: integer data leaves at";
      for (const auto& e : is.entries) what += " '" + e + "'";
      what += " and re-enters at";
      for (const auto& e : is.exits) what += " '" + e + "'";
    } else if (!is.entries.empty()) {
      what = "float from dequantized data to the graph outputs";
    } else if (!is.exits.empty()) {
      what = "float from the graph inputs up to quantization";
    } else {
      what = "float, no quantized data";
    }
    line("float island " + std::to_string(i + 1) + " (" + what + "):");
    for (size_t k = 0; k < is.nodes.size(); ++k) line("  " + is.nodes[k] + ": " + is.reasons[k]);
  }
  return out;
}

nlohmann::json plan_to_json(const LoweringPlan& plan) {
  nlohmann::json j;
  j["lowered"] = plan.lowered;
  j["integer_ops"] = nlohmann::json::array();
  for (const auto& op : plan.integer_ops) j["integer_ops"].push_back({{"node", op.node}, {"op", op.op}, {"detail", op.detail}});
  j["boundaries"] = nlohmann::json::array();
  for (const auto& b : plan.boundaries)
    j["boundaries"].push_back({{"node", b.node}, {"kind", b.quantize ? "quantize" : "dequantize"}, {"from", b.from},
                               {"to", b.to}, {"params", b.params}});
  j["islands"] = nlohmann::json::array();
  for (const auto& is : plan.islands) {
    nlohmann::json nodes = nlohmann::json::array();
    for (size_t k = 0; k < is.nodes.size(); ++k) nodes.push_back({{"node", is.nodes[k]}, {"reason", is.reasons[k]}});
    j["islands"].push_back({{"nodes", nodes}, {"entries", is.entries}, {"exits", is.exits},
                            {"from_graph_input", is.from_graph_input}, {"to_graph_output", is.to_graph_output},
                            {"boundary_break", is.boundary_break()}});
  }
  j["constant_dequantize"] = plan.constant_dequantize;
  j["summary"] = {{"integer_ops", plan.integer_ops.size()}, {"float_ops", plan.float_ops()},
                  {"islands", plan.islands.size()}, {"boundaries", plan.boundaries.size()},
                  {"boundary_breaks", plan.boundary_breaks()}};
  return j;
}

}  // namespace quant::passes
