#include "libquant/passes/qdq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "libquant/kernels/quantize.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/k_order.h"
#include "libquant/passes/shape_fold.h"

namespace quant::passes {
namespace {

// Ops that only move data: their output keeps their input's parameters
// (DESIGN Numerics, shape-only ops), so they run on 8-bit data unchanged.
const std::set<std::string> kSharesInputParams = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "MaxPool"};

// Ops with a weight input (index 1) quantized as a constant.
const std::set<std::string> kWeightOps = {"Conv", "ConvTranspose", "Gemm", "MatMul"};

// Producers whose output goes straight into a Relu/Clip: the pair runs as one
// integer op, so no Q/DQ sits between them (the activation's range is used).
const std::set<std::string> kFusesActivation = {"Conv", "Gemm", "MatMul", "Add"};

}  // namespace

const std::set<std::string>& default_quantized_ops() {
  // Integer kernels with int32 accumulation (Conv, Gemm, MatMul...), rescaling
  // ops (Add, Mul, Concat, pooling, Resize), shape ops on 8-bit data, and
  // unary ops that run as 256-entry tables (Sigmoid, Tanh, ...). Softmax,
  // normalizations and the like lose accuracy in 8 bits and stay float.
  static const std::set<std::string> ops = {
      "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Concat", "MaxPool", "AveragePool",
      "GlobalAveragePool", "Resize", "Relu", "Clip", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
      "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "LeakyRelu"};
  return ops;
}

namespace {

bool is_float_activation(const ir::Value* v) {
  return v && !ir::constant_data(v) && (v->dtype == DType::Float32 || v->dtype == DType::Undefined);
}

ir::Value* add_like(ir::Graph& g, const std::string& base, const ir::Value& like, DType dtype) {
  ir::Value* v = g.add_value(g.unique_name(base));
  v->dtype = dtype;
  v->has_shape = like.has_shape;
  v->shape = like.shape;
  v->dim_names = like.dim_names;
  return v;
}

// Scale and zero point initializers for `p`: scalars when per-tensor, 1-D along
// the axis otherwise.
std::pair<ir::Value*, ir::Value*> add_qparams(ir::Graph& g, const std::string& base, const QuantParams& p) {
  const int64_t n = static_cast<int64_t>(p.scale.size());
  Dims shape = p.per_tensor() ? Dims{} : Dims{n};
  Tensor scale = Tensor::from_vector<float>(shape, p.scale);
  Tensor zp(p.qtype, shape);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t z = p.zero_point.empty() ? 0 : p.zero_point[static_cast<size_t>(i)];
    switch (p.qtype) {
      case DType::UInt8: zp.data<uint8_t>()[i] = static_cast<uint8_t>(z); break;
      case DType::Int8: zp.data<int8_t>()[i] = static_cast<int8_t>(z); break;
      case DType::UInt16: zp.data<uint16_t>()[i] = static_cast<uint16_t>(z); break;
      case DType::Int16: zp.data<int16_t>()[i] = static_cast<int16_t>(z); break;
      case DType::Int32: zp.data<int32_t>()[i] = z; break;
      default: assert(false && "unsupported quantized type");
    }
  }
  return {add_constant(g, base + "_scale", std::move(scale)), add_constant(g, base + "_zero_point", std::move(zp))};
}

ir::Attribute axis_attr(const QuantParams& p) { return ir::Attribute::of_int(p.axis); }

template <class Q>
void quantize_weights(const Tensor& w, const QuantParams& p, Tensor& q) {
  int64_t outer = 1, len = w.size(), inner = 1;
  if (!p.per_tensor()) {
    len = w.dim(p.axis);
    for (int64_t d = 0; d < w.rank(); ++d) {
      if (d < p.axis) outer *= w.dim(d);
      if (d > p.axis) inner *= w.dim(d);
    }
  }
  std::vector<Q> zp(p.zero_point.begin(), p.zero_point.end());
  kernels::quantize_linear<Q>(w.data<float>(), q.data<Q>(), outer, len, inner, p.scale.data(), zp.data(), 0,
                              static_cast<int64_t>(p.scale.size()));
}

Expected<Tensor> quantize_weight_tensor(const Tensor& w, const QuantParams& p) {
  Tensor q(p.qtype, w.shape());
  if (p.qtype == DType::Int8) quantize_weights<int8_t>(w, p, q);
  else if (p.qtype == DType::UInt8) quantize_weights<uint8_t>(w, p, q);
  else return Status::bad_input("weights of type " + std::string(dtype_name(p.qtype)) + " are not supported yet");
  return q;
}

// A non-constant value with the type `dtype` and the static shape of `like`.
ir::Value* add_constant_like(ir::Graph& g, const std::string& base, const ir::Value& like, DType dtype) {
  ir::Value* v = add_like(g, base, like, dtype);
  v->has_shape = true;
  v->shape = like.constant->shape();
  v->dim_names.assign(v->shape.size(), "");
  return v;
}

// The per-channel axis of a weight input: Conv's output channels (dim 0),
// Gemm's N (dim 0 when transB, else 1), MatMul's last dim.
int64_t weight_axis(const ir::Node& n, const Tensor& w) {
  if (n.op_type == "Conv") return 0;
  // ConvTranspose weights are [C_in, C_out / group, k...]: output channels on
  // axis 1, per channel only without groups.
  if (n.op_type == "ConvTranspose") return n.attr_int("group", 1) == 1 ? 1 : -1;
  if (n.op_type == "Gemm") return n.attr_int("transB", 0) ? 0 : 1;
  if (n.op_type == "MatMul") return w.rank() - 1;
  return -1;
}

class QdqBuilder {
 public:
  QdqBuilder(ir::Graph& g, const profile::Profile& profile, const QuantizeOptions& o)
      : g_(g), profile_(profile), o_(o) {}

  Expected<QuantizeReport> run();

 private:
  Status quantize_activation(ir::Value* v);
  Status quantize_weight(ir::Node* node, size_t input);
  Status quantize_bias(ir::Node* node, size_t bias_input, const ir::Value* act, const QuantParams& w);

  ir::Graph& g_;
  const profile::Profile& profile_;
  const QuantizeOptions& o_;
  QuantizeReport report_;
  std::map<const ir::Value*, QuantParams> act_params_;  // float activation -> its parameters
  std::map<const ir::Value*, const ir::Value*> float_of_dequantized_;  // DQ output -> float activation
};

Status QdqBuilder::quantize_activation(ir::Value* v) {
  if (act_params_.count(v)) return Status::ok();
  auto it = profile_.tensors.find(v->name());
  // qprofile records every float tensor a run produces; a tensor of unknown
  // type that it did not record is not float (e.g. int64 shape arithmetic).
  if (it == profile_.tensors.end() && v->dtype == DType::Undefined) return Status::ok();
  if (it == profile_.tensors.end())
    return Status::bad_input("profile has no entry for activation '" + v->name() + "' (made from another model?)");
  QT_ASSIGN_OR_RETURN(calib::Range range, calib::range_by_name(it->second.hist, o_.calibration));
  QuantParams p = calib::choose_quant_params(range, o_.schema, o_.activations);
  std::string method = o_.calibration;
  const ir::Node* producer = v->producer;
  const auto& shares = o_.shares_input_params.empty() ? kSharesInputParams : o_.shares_input_params;
  auto fixed = producer && producer->domain.empty() ? o_.fixed_output_params.find(producer->op_type) : o_.fixed_output_params.end();
  if (fixed != o_.fixed_output_params.end()) {
    // The target fixes this op's output parameters (e.g. Sigmoid on [0, 1)).
    p.scale = {fixed->second.scale};
    p.zero_point = {fixed->second.zero_point};
    method = "fixed by the target for " + producer->op_type;
  } else if (producer && shares.count(producer->op_type) && producer->domain.empty()) {
    auto in = act_params_.find(producer->input(0));
    if (in != act_params_.end()) {
      p = in->second;
      for (const auto& d : report_.tensors)
        if (d.tensor == producer->input(0)->name()) range = d.range;
      method = "shared with input '" + producer->input(0)->name() + "' (" + producer->op_type + " moves data only)";
    }
  }
  act_params_[v] = p;
  report_.tensors.push_back({v->name(), "activation", method, range, p});
  // ai.onnx QuantizeLinear takes 16-bit types only from opset 21; ONNX
  // Runtime 1.20 runs them in its com.microsoft domain at any opset.
  const bool wide = p.qtype == DType::Int16 || p.qtype == DType::UInt16;
  const std::string domain = wide ? "com.microsoft" : "";
  if (wide) g_.opset_imports.try_emplace("com.microsoft", 1);

  auto [scale, zp] = add_qparams(g_, v->name(), p);
  ir::Value* q = add_like(g_, v->name() + "_quantized", *v, p.qtype);
  ir::Value* dq = add_like(g_, v->name() + "_dequantized", *v, DType::Float32);
  if (dq->dtype == DType::Undefined) dq->dtype = DType::Float32;
  std::vector<ir::Node*> users = g_.consumers(v);
  ir::Node* after = v->producer;
  // Insert right after the producer (or at the front for graph inputs) so the
  // node list stays topologically ordered.
  ir::Node* before = nullptr;
  const auto& nodes = g_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (after == nullptr) { before = nodes[i].get(); break; }
    if (nodes[i].get() == after) { before = i + 1 < nodes.size() ? nodes[i + 1].get() : nullptr; break; }
  }
  g_.insert_node(before, "QuantizeLinear", {v, scale, zp}, {q}, g_.unique_name(v->name() + "_QuantizeLinear"), domain);
  g_.insert_node(before, "DequantizeLinear", {q, scale, zp}, {dq}, g_.unique_name(v->name() + "_DequantizeLinear"), domain);
  float_of_dequantized_[dq] = v;
  for (ir::Node* u : users)
    for (ir::Value*& in : u->inputs)
      if (in == v) in = dq;
  return Status::ok();
}

Status QdqBuilder::quantize_weight(ir::Node* node, size_t input) {
  WeightPath path = trace_weight_path(g_, node->inputs[input]);
  if (!path.source) return Status::ok();  // not a constant float weight
  // The weight as the consumer sees it, after the shape ops.
  Tensor w = *path.source->constant;
  std::optional<int64_t> no_axis;
  for (ir::Node* op : path.chain) QT_RETURN_IF_ERROR(apply_shape_op(*op, w, no_axis));
  const int64_t axis = weight_axis(*node, w);
  auto by_op = o_.per_channel_by_op.find(node->op_type);
  const bool want_per_channel = by_op != o_.per_channel_by_op.end() ? by_op->second : o_.per_channel;
  const bool per_channel = want_per_channel && g_.opset() >= 13 && axis >= 0 && axis < w.rank();
  const std::string base = path.source->name();
  // A target may give depthwise convolutions their own weight type (ONNX
  // Runtime multiplies them in 16 bits: int8 never saturates there).
  const bool depthwise = node->op_type == "Conv" && w.rank() >= 3 && w.dim(1) == 1 && node->attr_int("group", 1) == w.dim(0);
  const DType wtype = depthwise && o_.depthwise_weights != DType::Undefined ? o_.depthwise_weights : o_.weights;

  // Per-channel weights behind shape ops are quantized at the source along
  // the axis that becomes the channel axis, then the shape ops are folded on
  // the integer data, the axis following the channel dimension. When an op
  // merges or splits the channel dimension, quantize after the shape ops.
  std::string method = per_channel ? "absmax per channel" : "absmax";
  QuantParams p;
  Tensor q;
  std::string why;
  std::optional<int64_t> at_source = per_channel && !path.chain.empty() ? source_axis(path, axis, why) : std::nullopt;
  if (at_source) {
    const Tensor& src = *path.source->constant;
    p = calib::choose_weight_params(src, *at_source, wtype, o_.schema, o_.weight_max);
    QT_ASSIGN_OR_RETURN(q, quantize_weight_tensor(src, p));
    std::optional<int64_t> moving = at_source;
    for (ir::Node* op : path.chain) QT_RETURN_IF_ERROR(apply_shape_op(*op, q, moving));
    assert(moving && *moving == axis);
    p.axis = *moving;
    method += ", shape ops folded on int8 data (axis " + std::to_string(*at_source) + " -> " + std::to_string(axis) + ")";
  } else {
    p = calib::choose_weight_params(w, per_channel ? axis : -1, wtype, o_.schema, o_.weight_max);
    QT_ASSIGN_OR_RETURN(q, quantize_weight_tensor(w, p));
    if (!path.chain.empty())
      method += why.empty() ? ", shape ops folded on float data" : ", quantized after the shape ops: " + why;
  }
  KOrder order;
  if (o_.weight_pair_bound > 0 && q.dtype() == DType::Int8 && w.dtype() == DType::Float32 && k_order(*node, w, order)) {
    const int64_t changed = bound_weight_pairs(order, w, p, o_.weight_pair_bound, q);
    if (changed) method += ", " + std::to_string(changed) + " pairs bounded to |w0| + |w1| <= " + std::to_string(o_.weight_pair_bound);
  }
  ir::Value* qv = add_constant(g_, base + "_quantized", std::move(q));
  auto [scale, zp] = add_qparams(g_, base, p);
  ir::Value* dq = add_constant_like(g_, base + "_dequantized", *qv, DType::Float32);
  ir::Node* dq_node = g_.insert_node(node, "DequantizeLinear", {qv, scale, zp}, {dq}, g_.unique_name(base + "_DequantizeLinear"));
  if (!p.per_tensor()) dq_node->attributes["axis"] = axis_attr(p);
  node->inputs[input] = dq;
  for (auto it = path.chain.rbegin(); it != path.chain.rend(); ++it) {
    report_.notes.push_back("folded " + (*it)->describe() + " into weight '" + base + "'");
    g_.remove_node(*it);
  }
  report_.tensors.push_back({base, "weight", method, {0, 0}, p});

  if (node->inputs.size() > 2 && node->inputs[2] && (node->op_type == "Conv" || node->op_type == "Gemm")) {
    // inputs[0] was already rewired to the DQ output of its float source.
    auto it = float_of_dequantized_.find(node->inputs[0]);
    if (it != float_of_dequantized_.end()) QT_RETURN_IF_ERROR(quantize_bias(node, 2, it->second, p));
  }
  return Status::ok();
}

// Bias as int32 at scale s_in * s_w[c], zero point 0 (DESIGN Numerics).
Status QdqBuilder::quantize_bias(ir::Node* node, size_t bias_input, const ir::Value* act, const QuantParams& w) {
  ir::Value* bv = node->inputs[bias_input];
  const Tensor* b = ir::constant_data(bv);
  if (!b || b->dtype() != DType::Float32 || b->rank() != 1) return Status::ok();
  const QuantParams& a = act_params_.at(act);
  if (!a.per_tensor()) return Status::ok();
  const int64_t n = b->size();
  if (!w.per_tensor() && static_cast<int64_t>(w.scale.size()) != n) return Status::ok();
  QuantParams p;
  p.qtype = DType::Int32;
  p.axis = 0;
  for (int64_t c = 0; c < (w.per_tensor() ? 1 : n); ++c) p.scale.push_back(a.scale[0] * w.scale[static_cast<size_t>(c)]);
  p.zero_point.assign(p.scale.size(), 0);
  Tensor q(DType::Int32, b->shape());
  for (int64_t c = 0; c < n; ++c) {
    const double s = p.scale[p.per_tensor() ? 0 : static_cast<size_t>(c)];
    double r = std::nearbyint(static_cast<double>(b->data<float>()[c]) / s);
    if (std::isnan(r)) r = 0;  // as QuantizeLinear maps NaN: to the zero point (casting NaN is UB)
    r = std::clamp(r, static_cast<double>(std::numeric_limits<int32_t>::min()), static_cast<double>(std::numeric_limits<int32_t>::max()));
    q.data<int32_t>()[c] = static_cast<int32_t>(r);
  }
  std::string base = bv->name();
  ir::Value* qv = add_constant(g_, base + "_quantized", std::move(q));
  auto [scale, zp] = add_qparams(g_, base, p);
  ir::Value* dq = add_like(g_, base + "_dequantized", *bv, DType::Float32);
  ir::Node* dq_node = g_.insert_node(node, "DequantizeLinear", {qv, scale, zp}, {dq}, g_.unique_name(base + "_DequantizeLinear"));
  if (!p.per_tensor()) dq_node->attributes["axis"] = axis_attr(p);
  node->inputs[bias_input] = dq;
  report_.tensors.push_back({base, "bias", "s_in * s_w", {0, 0}, p});
  return Status::ok();
}

Expected<QuantizeReport> QdqBuilder::run() {
  if (g_.opset() < 10) return Status::bad_input("QDQ output needs opset >= 10, the model has " + std::to_string(g_.opset()));
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());

  // Decide first, rewrite after, so decisions see the original graph.
  auto reason_float = [&](const ir::Node* n) -> std::string {
    if (o_.exclude_nodes.count(n->name)) return "excluded by --exclude-node";
    if (o_.exclude_ops.count(n->op_type)) return "excluded by --exclude-op";
    if (!n->domain.empty()) return "op of domain " + n->domain + " stays float";
    if (o_.include_ops.count(n->op_type)) return "";
    if (!o_.quantized_ops.empty() && !o_.quantized_ops.count(n->op_type)) return "op stays float (the target does not run it quantized)";
    if (o_.quantized_ops.empty() && !default_quantized_ops().count(n->op_type))
      return "op stays float (no integer form that keeps accuracy)";
    return "";
  };
  auto quantizable = [&](const ir::Node* n) { return reason_float(n).empty(); };
  // Outputs that go straight into a fused Relu/Clip get no Q/DQ.
  std::set<const ir::Value*> fused;
  for (ir::Node* n : order) {
    if (!quantizable(n) || !kFusesActivation.count(n->op_type)) continue;
    for (ir::Value* v : n->outputs) {
      auto users = v ? g_.consumers(v) : std::vector<ir::Node*>{};
      if (v && !g_.is_graph_output(v) && users.size() == 1 && users[0]->domain.empty() &&
          (users[0]->op_type == "Relu" || users[0]->op_type == "Clip"))
        fused.insert(v);
    }
  }
  // Shape ops between a constant weight and its consumer are folded into the
  // weight, not quantized as activations.
  std::set<const ir::Node*> on_weight_path;
  for (ir::Node* n : order) {
    if (!quantizable(n) || !kWeightOps.count(n->op_type)) continue;
    for (ir::Node* op : trace_weight_path(g_, n->input(1)).chain) on_weight_path.insert(op);
  }
  std::vector<ir::Value*> activations;
  std::set<const ir::Value*> chosen;
  auto choose = [&](ir::Value* v) {
    // Graph outputs stay float: the model's consumers get full precision.
    const bool weight_path = v && v->producer && on_weight_path.count(v->producer);
    if (is_float_activation(v) && !weight_path && !fused.count(v) && !g_.is_graph_output(v) && chosen.insert(v).second)
      activations.push_back(v);
  };
  std::vector<ir::Node*> quantized_nodes;
  for (ir::Node* n : order) {
    if (on_weight_path.count(n)) {
      report_.nodes.push_back({n->name, n->op_type, false, "shape op on a constant weight: folded into the weight"});
      continue;
    }
    if (std::string why = reason_float(n); !why.empty()) {
      report_.nodes.push_back({n->name, n->op_type, false, why});
      continue;
    }
    quantized_nodes.push_back(n);
    report_.nodes.push_back({n->name, n->op_type, true,
                             !n->outputs.empty() && fused.count(n->outputs[0]) ? "quantizable op, fused with the following activation" : "quantizable op"});
    for (ir::Value* v : n->inputs) choose(v);
    for (ir::Value* v : n->outputs) choose(v);
  }
  for (ir::Value* v : activations) QT_RETURN_IF_ERROR(quantize_activation(v));
  for (ir::Node* n : quantized_nodes) {
    if (kWeightOps.count(n->op_type) && n->inputs.size() > 1) QT_RETURN_IF_ERROR(quantize_weight(n, 1));
  }
  g_.remove_unused_values();
  QT_RETURN_IF_ERROR(g_.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g_));
  return report_;
}

}  // namespace

Expected<QuantizeReport> insert_qdq(ir::Graph& graph, const profile::Profile& profile, const QuantizeOptions& options) {
  QdqBuilder builder(graph, profile, options);
  return builder.run();
}

}  // namespace quant::passes
