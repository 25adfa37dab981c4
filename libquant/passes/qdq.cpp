#include "libquant/passes/qdq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "libquant/kernels/quantize.h"

namespace quant::passes {
namespace {

// Ops whose integer form keeps accuracy: their float activation inputs and
// outputs get Q/DQ pairs. Everything else reads dequantized floats.
const std::set<std::string> kQuantizableOps = {
    "Conv", "Gemm", "MatMul", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool",
    "Concat", "Relu", "Clip", "Flatten", "Reshape", "Transpose"};

// Producers whose output goes straight into a Relu/Clip: the pair runs as one
// integer op, so no Q/DQ sits between them (the activation's range is used).
const std::set<std::string> kFusesActivation = {"Conv", "Gemm", "MatMul", "Add"};

bool is_float_activation(const ir::Value* v) {
  return v && !ir::constant_data(v) && (v->dtype == DType::Float32 || v->dtype == DType::Undefined);
}

ir::Value* add_constant(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* v = g.add_value(g.unique_name(base));
  v->dtype = t.dtype();
  v->has_shape = true;
  v->shape = t.shape();
  v->dim_names.assign(v->shape.size(), "");
  v->constant = std::make_unique<Tensor>(std::move(t));
  return v;
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
    outer = 1, len = w.dim(p.axis), inner = 1;
    for (int64_t d = 0; d < w.rank(); ++d) {
      if (d < p.axis) outer *= w.dim(d);
      if (d > p.axis) inner *= w.dim(d);
    }
  }
  std::vector<Q> zp(p.zero_point.begin(), p.zero_point.end());
  kernels::quantize_linear<Q>(w.data<float>(), q.data<Q>(), outer, len, inner, p.scale.data(), zp.data(), 0,
                              static_cast<int64_t>(p.scale.size()));
}

class QdqBuilder {
 public:
  QdqBuilder(ir::Graph& g, const profile::Profile& profile, const QuantizeOptions& o)
      : g_(g), profile_(profile), o_(o) {}

  Expected<QuantizeReport> run();

 private:
  Status quantize_activation(ir::Value* v);
  Status quantize_weight(ir::Node* node, size_t input, int64_t axis);
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
  if (it == profile_.tensors.end())
    return Status::bad_input("profile has no entry for activation '" + v->name() + "' (made from another model?)");
  QT_ASSIGN_OR_RETURN(calib::Range range, calib::range_by_name(it->second.hist, o_.calibration));
  QuantParams p = calib::choose_quant_params(range, o_.schema, o_.activations);
  act_params_[v] = p;
  report_.tensors.push_back({v->name(), "activation", o_.calibration, range, p});

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
  g_.insert_node(before, "QuantizeLinear", {v, scale, zp}, {q}, g_.unique_name(v->name() + "_QuantizeLinear"));
  g_.insert_node(before, "DequantizeLinear", {q, scale, zp}, {dq}, g_.unique_name(v->name() + "_DequantizeLinear"));
  float_of_dequantized_[dq] = v;
  for (ir::Node* u : users)
    for (ir::Value*& in : u->inputs)
      if (in == v) in = dq;
  return Status::ok();
}

Status QdqBuilder::quantize_weight(ir::Node* node, size_t input, int64_t axis) {
  ir::Value* wv = node->inputs[input];
  const Tensor* w = ir::constant_data(wv);
  if (!w || w->dtype() != DType::Float32) return Status::ok();
  const bool per_channel = o_.per_channel && g_.opset() >= 13 && axis >= 0 && axis < w->rank();
  QuantParams p = calib::choose_weight_params(*w, per_channel ? axis : -1, o_.weights, o_.schema);
  Tensor q(p.qtype, w->shape());
  if (p.qtype == DType::Int8) quantize_weights<int8_t>(*w, p, q);
  else if (p.qtype == DType::UInt8) quantize_weights<uint8_t>(*w, p, q);
  else return Status::bad_input("weights of type " + std::string(dtype_name(p.qtype)) + " are not supported yet");
  std::string base = wv->name();
  ir::Value* qv = add_constant(g_, base + "_quantized", std::move(q));
  auto [scale, zp] = add_qparams(g_, base, p);
  ir::Value* dq = add_like(g_, base + "_dequantized", *wv, DType::Float32);
  ir::Node* dq_node = g_.insert_node(node, "DequantizeLinear", {qv, scale, zp}, {dq}, g_.unique_name(base + "_DequantizeLinear"));
  if (!p.per_tensor()) dq_node->attributes["axis"] = axis_attr(p);
  node->inputs[input] = dq;
  calib::Range r{0, 0};
  report_.tensors.push_back({base, "weight", per_channel ? "absmax per channel" : "absmax", r, p});

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

// The per-channel axis of a weight input: Conv's output channels (dim 0),
// Gemm's N (dim 0 when transB, else 1), MatMul's last dim.
int64_t weight_axis(const ir::Node& n, const Tensor& w) {
  if (n.op_type == "Conv") return 0;
  if (n.op_type == "Gemm") return n.attr_int("transB", 0) ? 0 : 1;
  if (n.op_type == "MatMul") return w.rank() - 1;
  return -1;
}

Expected<QuantizeReport> QdqBuilder::run() {
  if (g_.opset() < 10) return Status::bad_input("QDQ output needs opset >= 10, the model has " + std::to_string(g_.opset()));
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());

  // Decide first, rewrite after, so decisions see the original graph.
  auto quantizable = [](const ir::Node* n) { return n->domain.empty() && kQuantizableOps.count(n->op_type) > 0; };
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
  std::vector<ir::Value*> activations;
  std::set<const ir::Value*> chosen;
  auto choose = [&](ir::Value* v) {
    // Graph outputs stay float: the model's consumers get full precision.
    if (is_float_activation(v) && !fused.count(v) && !g_.is_graph_output(v) && chosen.insert(v).second)
      activations.push_back(v);
  };
  std::vector<ir::Node*> quantized_nodes;
  for (ir::Node* n : order) {
    if (!quantizable(n)) {
      report_.nodes.push_back({n->name, n->op_type, false, "op stays float (no integer form that keeps accuracy)"});
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
    if (n->op_type != "Conv" && n->op_type != "Gemm" && n->op_type != "MatMul") continue;
    const Tensor* w = n->inputs.size() > 1 ? ir::constant_data(n->inputs[1]) : nullptr;
    if (w) QT_RETURN_IF_ERROR(quantize_weight(n, 1, weight_axis(*n, *w)));
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
