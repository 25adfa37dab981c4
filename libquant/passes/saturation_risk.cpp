#include "libquant/passes/saturation_risk.h"

#include <algorithm>

#include "libquant/passes/k_order.h"
#include "libquant/passes/lower_qdq.h"

namespace quant::passes {
namespace {

const ir::Node* producer_of(const ir::Value* v, const char* op_type) {
  return v && v->producer && v->producer->op_type == op_type && v->producer->domain.empty() ? v->producer : nullptr;
}

// Whether ONNX Runtime leaves Conv `n` in float: its output goes through a
// Relu/Clip to a QuantizeLinear whose range does not imply the activation,
// which keeps the QDQ Conv selector from fusing it (as qrun's lowering marks
// such convs qdq_runtime_float, lower_qdq.cpp; Gemm and MatMul are fused
// with a float output all the same).
bool stays_float(const ir::Graph& graph, const ir::Node& n) {
  if (n.op_type != "Conv") return false;
  const ir::Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y || graph.is_graph_output(y)) return false;
  const auto users = graph.consumers(y);
  if (users.size() != 1 || !users[0]->domain.empty() || (users[0]->op_type != "Relu" && users[0]->op_type != "Clip"))
    return false;
  const ir::Node& act = *users[0];
  const ir::Value* a = act.outputs.empty() ? nullptr : act.outputs[0];
  const auto q = a && !graph.is_graph_output(a) ? graph.consumers(a) : decltype(graph.consumers(a)){};
  return q.size() == 1 && q[0]->op_type == "QuantizeLinear" && !activation_implied_by(act, *q[0]);
}

}  // namespace

std::vector<SaturationRisk> find_saturation_risks(const ir::Graph& graph,
                                                  const std::map<std::string, std::pair<int32_t, int32_t>>& activation_ranges,
                                                  bool int8_as_uint8) {
  std::vector<SaturationRisk> risks;
  for (const auto& n : graph.nodes()) {
    if (n->op_type != "Conv" && n->op_type != "MatMul" && n->op_type != "Gemm") continue;
    // x: DQ(Q(float activation)); w: DQ(int8 constant).
    const ir::Node* xdq = producer_of(n->input(0), "DequantizeLinear");
    const ir::Node* xq = xdq ? producer_of(xdq->input(0), "QuantizeLinear") : nullptr;
    const ir::Node* wdq = producer_of(n->input(1), "DequantizeLinear");
    const Tensor* w = wdq ? ir::constant_data(wdq->input(0)) : nullptr;
    if (!xq || !w || w->dtype() != DType::Int8 || !xq->input(0)) continue;
    const ir::Value* xq_out = xdq->input(0);
    // ONNX Runtime rewrites an int8 Q -> DQ pair only where the Q feeds that
    // DQ alone (lower_qdq.cpp, u8_rewritten_pairs).
    const bool pair = !graph.is_graph_output(xq_out) && graph.consumers(xq_out).size() == 1;
    const bool x_u8 = xq_out->dtype == DType::UInt8 || (xq_out->dtype == DType::Int8 && int8_as_uint8 && pair);
    auto range = activation_ranges.find(xq->input(0)->name());
    if (!x_u8 || range == activation_ranges.end() || stays_float(graph, *n)) continue;
    const int32_t shift = xq_out->dtype == DType::Int8 ? 128 : 0;
    const int64_t lo = range->second.first + shift, hi = range->second.second + shift;
    KOrder o;
    if (!k_order(*n, *w, o)) continue;
    SaturationRisk r{n->name, n->op_type, 0, 0};
    const int8_t* wd = w->data<int8_t>();
    for (int64_t col = 0; col < o.columns; ++col)
      for (int64_t j = 0; j < o.k; j += 2) {
        int64_t top = 0, bottom = 0;
        for (int64_t i = j; i < std::min(j + 2, o.k); ++i) {
          const int64_t wi = wd[o.index(col, i)];
          top += std::max(lo * wi, hi * wi), bottom += std::min(lo * wi, hi * wi);
        }
        ++r.pairs;
        r.can_saturate += top > 32767 || bottom < -32768;
      }
    if (r.can_saturate) risks.push_back(r);
  }
  return risks;
}

}  // namespace quant::passes
