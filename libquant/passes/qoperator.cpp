#include "libquant/passes/qoperator.h"

#include "libquant/passes/k_order.h"
#include "libquant/passes/lower_qdq.h"

namespace quant::passes {

Expected<std::vector<std::string>> emit_qoperator(ir::Graph& graph) {
  QT_ASSIGN_OR_RETURN(Lowering lowered, lower_qdq(graph, LowerOptions{LowerTarget::OnnxRuntime, nullptr, false}));
  return lowered.notes;
}

namespace {

const ir::Node* dequantize_of(const ir::Value* v) {
  const ir::Node* p = v ? v->producer : nullptr;
  return p && p->op_type == "DequantizeLinear" && p->inputs.size() >= 3 && p->inputs[2] ? p : nullptr;
}

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// Where `n` reads its 8-bit weight (data and zero point) and whether ONNX
// Runtime multiplies its activation as uint8; false where it does not apply.
bool u8_activation_weight(const ir::Node& n, ir::Value*& data, ir::Value*& zp) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "QLinearConv" || n.op_type == "QLinearMatMul") {
    if (n.inputs.size() < 6 || !n.inputs[0] || n.inputs[0]->dtype != DType::UInt8) return false;
    data = n.inputs[3], zp = n.inputs[5];
    return data && zp;
  }
  if (n.op_type != "Conv" && n.op_type != "MatMul" && n.op_type != "Gemm") return false;
  const ir::Node* xdq = dequantize_of(n.input(0));
  const ir::Node* wdq = dequantize_of(n.input(1));
  if (!xdq || !wdq || !is_8bit(xdq->input(0)->dtype)) return false;
  data = wdq->inputs[0], zp = wdq->inputs[2];
  return true;
}

}  // namespace

std::vector<std::string> uint8_weights_where_u8s8(ir::Graph& graph) {
  std::vector<std::string> changed;
  for (const auto& n : graph.nodes()) {
    ir::Value *data = nullptr, *zp = nullptr;
    if (!u8_activation_weight(*n, data, zp)) continue;
    if (!data->constant || !zp->constant || data->constant->dtype() != DType::Int8 || zp->constant->dtype() != DType::Int8)
      continue;
    const bool conv = n->op_type == "Conv" || n->op_type == "QLinearConv";
    if ((conv && depthwise_weight(*n, *data->constant)) || graph.consumers(data).size() != 1 ||
        graph.consumers(zp).size() != 1)
      continue;
    // q - zp is unchanged when both move by 128.
    for (ir::Value* v : {data, zp}) {
      Tensor u(DType::UInt8, v->constant->shape());
      const int8_t* from = v->constant->data<int8_t>();
      uint8_t* to = u.data<uint8_t>();
      for (int64_t i = 0; i < u.size(); ++i) to[i] = static_cast<uint8_t>(from[i] + 128);
      *v->constant = std::move(u);
      v->dtype = DType::UInt8;
    }
    changed.push_back(data->name());
  }
  return changed;
}

}  // namespace quant::passes
