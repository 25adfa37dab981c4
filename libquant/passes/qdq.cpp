#include "libquant/passes/qdq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "libquant/kernels/quantize.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/k_order.h"
#include "libquant/passes/param_groups.h"
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
  // An activation's parameters as chosen on its own (from its range, or
  // fixed by the target for its producer); nullopt when it is not float.
  struct Choice {
    QuantParams params;
    calib::Range range{0, 0};
    std::string method;
    bool fixed = false;
  };
  Expected<std::optional<Choice>> own_choice(const ir::Value* v) const;
  Status choose_group_params(const ParamGroups& groups);
  Status quantize_activation(ir::Value* v);
  Status quantize_weight(ir::Node* node, size_t input, bool first_layer = false);
  Status quantize_bias(ir::Node* node, size_t bias_input, const ir::Value* act, const QuantParams& w);

  ir::Graph& g_;
  const profile::Profile& profile_;
  const QuantizeOptions& o_;
  QuantizeReport report_;
  std::map<const ir::Value*, Choice> group_choice_;  // grouped activation -> its group's parameters
  // Activations a consumer takes in their own type (QNN's MatMul B).
  struct OwnType {
    DType type;
    calib::Schema schema;
    ir::Node* consumer;
  };
  std::map<const ir::Value*, OwnType> type_of_;
  std::set<const ir::Value*> wide_;  // activations of QuantizeOptions::wide_nodes
  DType activation_type(const ir::Value* v) const { return wide_.count(v) ? o_.wide_activations : o_.activations; }
  // Edges where a grouped tensor is requantized for one reader: a fixed
  // output read by a Concat whose group has other parameters, a shared
  // tensor read as a MatMul B in another type. The backend's converter adds
  // such a requantization itself (TFLite: QUANTIZE; ONNX Runtime's QNN
  // config: a Q/DQ "convert" pair); in QDQ form it is a second Q/DQ pair.
  struct Requant {
    const ir::Value* value;
    Choice choice;
    std::vector<ir::Node*> readers;
  };
  std::vector<Requant> requant_;
  std::map<const ir::Value*, ir::Value*> dequantized_;  // float activation -> its DQ output
  Status insert_requant(const Requant& r);
  // QuantizeLinear(x) -> DequantizeLinear with p, named after `base`, before
  // `before` (null: at the end); returns the dequantized value.
  ir::Value* add_qdq_pair(ir::Value* x, const QuantParams& p, const std::string& base, ir::Node* before);
  std::map<const ir::Value*, QuantParams> act_params_;  // float activation -> its parameters
  std::map<const ir::Value*, const ir::Value*> float_of_dequantized_;  // DQ output -> float activation
};

Expected<std::optional<QdqBuilder::Choice>> QdqBuilder::own_choice(const ir::Value* v) const {
  auto it = profile_.tensors.find(v->name());
  // qprofile records every float tensor a run produces; a tensor of unknown
  // type that it did not record is not float (e.g. int64 shape arithmetic).
  if (it == profile_.tensors.end() && v->dtype == DType::Undefined) return std::optional<Choice>();
  if (it == profile_.tensors.end())
    return Status::bad_input("profile has no entry for activation '" + v->name() + "' (made from another model?)");
  Choice c;
  QT_ASSIGN_OR_RETURN(c.range, calib::range_by_name(it->second.hist, o_.calibration));
  auto own = type_of_.find(v);
  c.params = own != type_of_.end() ? calib::choose_quant_params(c.range, own->second.schema, own->second.type)
                                   : calib::choose_quant_params(c.range, o_.schema, activation_type(v));
  c.method = o_.calibration;
  if (own == type_of_.end() && wide_.count(v)) c.method += ", " + std::string(dtype_name(o_.wide_activations)) + ": a layer moved to 16 bits reads or writes it";
  if (own != type_of_.end()) c.method += ", " + std::string(dtype_name(own->second.type)) + " " +
                                         std::string(calib::schema_name(own->second.schema)) + " as the target takes MatMul's B";
  const ir::Node* producer = v->producer;
  auto fixed = producer && producer->domain.empty() ? o_.fixed_output_params.find(producer->op_type) : o_.fixed_output_params.end();
  if (fixed != o_.fixed_output_params.end()) {
    // The target fixes this op's output parameters (e.g. Sigmoid on [0, 1)).
    c.params.scale = {fixed->second.scale};
    c.params.zero_point = {fixed->second.zero_point};
    c.method = "fixed by the target for " + producer->op_type;
    c.fixed = true;
  }
  return std::optional<Choice>(c);
}

// One set of parameters per group, from the union of its members' ranges.
// Members whose producer has fixed parameters (Sigmoid...) lend them to the
// whole group when they agree and the others' ranges fit in them (one step of
// slack, e.g. a Reshape of that Sigmoid); otherwise each keeps its own and is
// requantized to the group's where a joining op reads it. A member a MatMul
// takes as B in another type stays in the group and is requantized there.
Status QdqBuilder::choose_group_params(const ParamGroups& groups) {
  for (size_t gi = 0; gi < groups.members.size(); ++gi) {
    std::vector<std::pair<const ir::Value*, Choice>> fixed;
    std::optional<Choice> open;
    calib::Range all{0, 0};
    bool any = false;
    for (const ir::Value* v : groups.members[gi]) {
      QT_ASSIGN_OR_RETURN(std::optional<Choice> c, own_choice(v));
      if (!c) continue;
      all = any ? calib::Range{std::min(all.min, c->range.min), std::max(all.max, c->range.max)} : c->range;
      any = true;
      if (c->fixed) fixed.emplace_back(v, *c);
      else if (!open) open = c;
      else open->range = {std::min(open->range.min, c->range.min), std::max(open->range.max, c->range.max)};
    }
    if (!any) continue;
    // One wide member makes the group wide: its members share one set of parameters.
    const bool wide_group = std::any_of(groups.members[gi].begin(), groups.members[gi].end(),
                                        [&](const ir::Value* v) { return wide_.count(v) > 0; });
    std::string ops;
    for (const ir::Node* node : groups.joined_by[gi]) ops += (ops.empty() ? "" : ", ") + node->op_type + " '" + node->name + "'";
    const std::string why = "; shared by the tensors the target requires to agree (" + ops + ")";
    // All fixed members agree, and the open members' values fit in them?
    bool lend = !fixed.empty();
    for (const auto& [v, c] : fixed)
      lend = lend && c.params.scale == fixed[0].second.params.scale && c.params.zero_point == fixed[0].second.params.zero_point;
    if (lend && open) {
      const QuantParams& f = fixed[0].second.params;
      auto r = int_range(f.qtype);
      const double s = f.scale[0], z = f.zero_point[0];
      lend = r && open->range.min >= (static_cast<double>(r->min) - z - 1) * s && open->range.max <= (static_cast<double>(r->max) - z + 1) * s;
    }
    Choice group;
    if (lend) {
      group = fixed[0].second;
    } else {
      group.range = all;  // the fixed members' values too: they are requantized into it
      group.params = calib::choose_quant_params(all, o_.schema, wide_group ? o_.wide_activations : o_.activations);
      group.method = o_.calibration + " over the union of the group's ranges";
      if (wide_group) group.method += ", " + std::string(dtype_name(o_.wide_activations)) + " for a layer moved to 16 bits";
    }
    group.method += why;
    for (const ir::Value* v : groups.members[gi]) {
      auto f = std::find_if(fixed.begin(), fixed.end(), [&](const auto& m) { return m.first == v; });
      if (lend || f == fixed.end()) {
        group_choice_[v] = group;
      } else {
        group_choice_[v] = f->second;
        Requant r{v, group, {}};
        for (const ir::Node* node : groups.joined_by[gi])
          for (const ir::Value* in : node->inputs)
            if (in == v) r.readers.push_back(const_cast<ir::Node*>(node));
        if (!r.readers.empty()) requant_.push_back(r);
        report_.notes.push_back("'" + v->name() + "' keeps the parameters the target fixes for " + v->producer->op_type +
                                " and is requantized to its group's (" + ops + ") where they read it");
      }
      auto own = type_of_.find(v);
      if (own != type_of_.end()) {
        // The group decides v's own Q/DQ; its MatMul reads a requantized copy.
        Choice b = group;
        b.params = calib::choose_quant_params(group.range, own->second.schema, own->second.type);
        b.method = o_.calibration + ", " + std::string(dtype_name(own->second.type)) + " " +
                   std::string(calib::schema_name(own->second.schema)) + " as the target takes MatMul's B";
        requant_.push_back({v, b, {own->second.consumer}});
      }
    }
  }
  return Status::ok();
}

ir::Value* QdqBuilder::add_qdq_pair(ir::Value* x, const QuantParams& p, const std::string& base, ir::Node* before) {
  // ai.onnx QuantizeLinear takes 16-bit types only from opset 21; ONNX
  // Runtime 1.20 runs them in its com.microsoft domain at any opset.
  const bool wide = p.qtype == DType::Int16 || p.qtype == DType::UInt16;
  const std::string domain = wide ? "com.microsoft" : "";
  if (wide) g_.opset_imports.try_emplace("com.microsoft", 1);
  auto [scale, zp] = add_qparams(g_, base, p);
  ir::Value* q = add_like(g_, base + "_quantized", *x, p.qtype);
  ir::Value* dq = add_like(g_, base + "_dequantized", *x, DType::Float32);
  g_.insert_node(before, "QuantizeLinear", {x, scale, zp}, {q}, g_.unique_name(base + "_QuantizeLinear"), domain);
  g_.insert_node(before, "DequantizeLinear", {q, scale, zp}, {dq}, g_.unique_name(base + "_DequantizeLinear"), domain);
  return dq;
}

// A second Q/DQ pair on the dequantized `value` for `readers` only.
Status QdqBuilder::insert_requant(const Requant& r) {
  auto it = dequantized_.find(r.value);
  if (it == dequantized_.end()) return Status::ok();
  ir::Value* dq = it->second;
  const QuantParams& p = r.choice.params;
  const std::string base = r.value->name() + "_requantized";
  ir::Value* dq2 = add_qdq_pair(dq, p, base, r.readers.front());
  for (ir::Node* u : r.readers)
    for (ir::Value*& in : u->inputs)
      if (in == dq) in = dq2;
  report_.tensors.push_back({base, "activation", "requantized for " + r.readers.front()->describe() + ": " + r.choice.method,
                             r.choice.range, p});
  return Status::ok();
}

Status QdqBuilder::quantize_activation(ir::Value* v) {
  if (act_params_.count(v)) return Status::ok();
  std::optional<Choice> choice;
  if (auto g = group_choice_.find(v); g != group_choice_.end()) {
    choice = g->second;
  } else {
    QT_ASSIGN_OR_RETURN(choice, own_choice(v));
  }
  if (!choice) return Status::ok();
  const QuantParams p = choice->params;
  act_params_[v] = p;
  report_.tensors.push_back({v->name(), "activation", choice->method, choice->range, p});
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
  ir::Value* dq = add_qdq_pair(v, p, v->name(), before);
  float_of_dequantized_[dq] = v;
  dequantized_[v] = dq;
  for (ir::Node* u : users)
    for (ir::Value*& in : u->inputs)
      if (in == v) in = dq;
  return Status::ok();
}

Status QdqBuilder::quantize_weight(ir::Node* node, size_t input, bool first_layer) {
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
  // Why a per-channel request ends per tensor (the report says so).
  std::string per_tensor_why;
  if (want_per_channel && !per_channel)
    per_tensor_why = g_.opset() < 13 ? ", per tensor: per-channel DequantizeLinear needs opset 13"
                     : node->op_type == "ConvTranspose" ? ", per tensor: a grouped ConvTranspose has no per-channel axis"
                                                        : ", per tensor: no output-channel axis";
  const std::string base = path.source->name();
  // A target may give depthwise convolutions their own weight type (ONNX
  // Runtime multiplies them in 16 bits: int8 never saturates there).
  const bool depthwise = node->op_type == "Conv" && depthwise_weight(*node, w);
  const DType wtype = depthwise && o_.depthwise_weights != DType::Undefined ? o_.depthwise_weights : o_.weights;

  // Per-channel weights behind shape ops are quantized at the source along
  // the axis that becomes the channel axis, then the shape ops are folded on
  // the integer data, the axis following the channel dimension. When an op
  // merges or splits the channel dimension, quantize after the shape ops.
  // NNCF's overflow fix narrows the first layers' weights (their inputs, raw
  // model inputs, use the full 8 bits and are the likeliest to saturate).
  const int32_t weight_max = first_layer && o_.first_layer_weight_max > 0 ? o_.first_layer_weight_max : o_.weight_max;
  std::string method = per_channel ? "absmax per channel" : "absmax";
  if (weight_max != o_.weight_max) method += " on [-" + std::to_string(weight_max) + ", " + std::to_string(weight_max) + "] (first layer)";
  QuantParams p;
  Tensor q;
  std::string why;
  std::optional<int64_t> at_source = per_channel && !path.chain.empty() ? source_axis(path, axis, why) : std::nullopt;
  if (at_source) {
    const Tensor& src = *path.source->constant;
    p = calib::choose_weight_params(src, *at_source, wtype, o_.schema, weight_max);
    QT_ASSIGN_OR_RETURN(q, quantize_weight_tensor(src, p));
    std::optional<int64_t> moving = at_source;
    for (ir::Node* op : path.chain) QT_RETURN_IF_ERROR(apply_shape_op(*op, q, moving));
    assert(moving && *moving == axis);
    p.axis = *moving;
    method += ", shape ops folded on int8 data (axis " + std::to_string(*at_source) + " -> " + std::to_string(axis) + ")";
  } else {
    p = calib::choose_weight_params(w, per_channel ? axis : -1, wtype, o_.schema, weight_max);
    QT_ASSIGN_OR_RETURN(q, quantize_weight_tensor(w, p));
    if (!path.chain.empty())
      method += why.empty() ? ", shape ops folded on float data" : ", quantized after the shape ops: " + why;
  }
  method += per_tensor_why;
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

  if (node->inputs.size() > 2 && node->inputs[2] && (node->op_type == "Conv" || node->op_type == "Gemm") && o_.bias != DType::Float32) {
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
  constexpr double kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  for (int64_t c = 0; c < n; ++c) {
    const double s = p.scale[p.per_tensor() ? 0 : static_cast<size_t>(c)];
    double r = std::nearbyint(static_cast<double>(b->data<float>()[c]) / s);
    if (std::isnan(r)) r = 0;  // as QuantizeLinear maps NaN: to the zero point (casting NaN is UB)
    if (o_.bias == DType::Int64 && (r < kMin || r > kMax)) {
      // An int64-bias target (TFLite 16x8) widens the bias itself; ONNX can
      // only hand it an int32 one (DequantizeLinear, opset 21: no int64
      // input), so a bias that does not fit stays float.
      report_.notes.push_back("bias '" + bv->name() + "' of " + node->describe() + " stays float: " +
                              std::to_string(static_cast<double>(b->data<float>()[c])) + " / (s_in * s_w) leaves int32 " +
                              "and the target's int64 bias has no ONNX DequantizeLinear form");
      return Status::ok();
    }
    q.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(r, kMin, kMax));
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
  if (const OpsetNeed need = qdq_opset_need(o_); g_.opset() < need.required)
    return Status::bad_input("QDQ output needs opset >= " + std::to_string(need.required) + ", the model has " +
                             std::to_string(g_.opset()));
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());

  // Decide first, rewrite after, so decisions see the original graph.
  auto reason_float = [&](const ir::Node* n) -> std::string {
    if (o_.exclude_nodes.count(n->name)) return "excluded by --exclude-node";
    if (o_.exclude_ops.count(n->op_type)) return "excluded by --exclude-op";
    if (!n->domain.empty()) return "op of domain " + n->domain + " stays float";
    if (o_.include_ops.count(n->op_type)) return "";
    if (!o_.quantized_ops.empty() && !o_.quantized_ops.count(n->op_type))
      return "op stays float: not in the op set of target " + (o_.target.empty() ? std::string("(unnamed)") : o_.target) +
             " (it would fall back to float there)";
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
      // Only into a Relu/Clip that is itself quantized: one the target runs
      // float needs its input quantized like any other float op's.
      if (v && !g_.is_graph_output(v) && users.size() == 1 && users[0]->domain.empty() &&
          (users[0]->op_type == "Relu" || users[0]->op_type == "Clip") && quantizable(users[0]))
        fused.insert(v);
    }
  }
  // Shape ops between a constant weight and its consumer are folded into the
  // weight, not quantized as activations.
  // Which input of an op is a weight: input 1 of Conv/Gemm/MatMul, and the
  // inputs a target names (QNN: LayerNormalization's scale); -1: none.
  auto weight_input = [&](const ir::Node* n) -> int {
    if (!n->domain.empty()) return -1;
    if (kWeightOps.count(n->op_type)) return 1;
    auto it = o_.weight_inputs.find(n->op_type);
    return it != o_.weight_inputs.end() && it->second < static_cast<int>(n->inputs.size()) ? it->second : -1;
  };
  std::set<const ir::Node*> on_weight_path;
  for (ir::Node* n : order) {
    if (!quantizable(n) || weight_input(n) < 0) continue;
    for (ir::Node* op : trace_weight_path(g_, n->input(static_cast<size_t>(weight_input(n)))).chain) on_weight_path.insert(op);
  }
  // The first layers: weighted ops that read a graph input.
  std::set<const ir::Node*> first_layer;
  for (ir::Node* n : order)
    if (kWeightOps.count(n->op_type) && n->input(0) &&
        std::find(g_.inputs.begin(), g_.inputs.end(), n->input(0)) != g_.inputs.end())
      first_layer.insert(n);
  std::vector<ir::Value*> activations;
  std::set<const ir::Value*> chosen;
  auto choose = [&](ir::Value* v) {
    // Graph outputs stay float: the model's consumers get full precision.
    const bool weight_path = v && v->producer && on_weight_path.count(v->producer);
    if (is_float_activation(v) && !weight_path && !fused.count(v) && !g_.is_graph_output(v) && chosen.insert(v).second)
      activations.push_back(v);
  };
  std::vector<ir::Node*> quantized_nodes;
  // A decision with its weight bytes (NodeDecision): a quantized node's weight
  // counts at it, through the shape ops folded into it, which count nothing.
  std::set<const ir::Value*> counted;
  auto decide = [&](ir::Node* n, bool quantized, std::string why) {
    NodeDecision d{n->name, n->op_type, quantized, std::move(why)};
    const int w = quantized ? weight_input(n) : -1;
    for (size_t i = 0; i < n->inputs.size() && !on_weight_path.count(n); ++i) {
      if (static_cast<int>(i) == w) {
        const ir::Value* source = trace_weight_path(g_, n->inputs[i]).source;
        const Tensor* t = source ? ir::constant_data(source) : nullptr;
        if (t && t->rank() >= 2 && counted.insert(source).second) d.weight_bytes += static_cast<int64_t>(t->byte_size());
      } else if (const int64_t b = float_weight_bytes(*n, i); b > 0 && counted.insert(n->inputs[i]).second) {
        (quantized ? d.float_bytes : d.weight_bytes) += b;
      }
    }
    report_.nodes.push_back(std::move(d));
  };
  for (ir::Node* n : order) {
    if (on_weight_path.count(n)) {
      decide(n, false, "shape op on a constant weight: folded into the weight");
      continue;
    }
    if (std::string why = reason_float(n); !why.empty()) {
      decide(n, false, why);
      continue;
    }
    // An op of the set with no float tensor (shape arithmetic on int64...)
    // has nothing to quantize.
    const bool any_float = std::any_of(n->inputs.begin(), n->inputs.end(), is_float_activation) ||
                           std::any_of(n->outputs.begin(), n->outputs.end(), is_float_activation);
    if (!any_float) {
      std::string types;
      for (const ir::Value* v : n->inputs)
        if (v && v->dtype != DType::Undefined) types += (types.empty() ? "" : ", ") + std::string(dtype_name(v->dtype));
      decide(n, false, "no float tensor to quantize (inputs: " + types + ")");
      continue;
    }
    quantized_nodes.push_back(n);
    decide(n, true, !n->outputs.empty() && fused.count(n->outputs[0]) ? "quantizable op, fused with the following activation" : "quantizable op");
    for (ir::Value* v : n->inputs) choose(v);
    // TensorRT-style placement quantizes what quantized ops read, not what
    // they write (its fusions requantize outputs themselves).
    if (o_.placement != "inputs")
      for (ir::Value* v : n->outputs) choose(v);
    // A MatMul of two activations may take B in its own type (QNN HTP).
    if (o_.matmul_b_type != DType::Undefined && n->op_type == "MatMul" && n->domain.empty() && n->inputs.size() == 2 &&
        chosen.count(n->inputs[0]) && chosen.count(n->inputs[1]))
      type_of_[n->inputs[1]] = {o_.matmul_b_type, o_.matmul_b_schema, n};
  }
  // Layers moved to 16 bits: what they read and write, and the output of a
  // Relu/Clip fused after one (its own output is the layer's output).
  if (o_.wide_activations != DType::Undefined)
    for (ir::Node* n : quantized_nodes) {
      if (!o_.wide_nodes.count(n->name)) continue;
      for (ir::Value* v : n->inputs)
        if (chosen.count(v)) wide_.insert(v);
      for (ir::Value* v : n->outputs) {
        if (chosen.count(v)) wide_.insert(v);
        if (v && fused.count(v))
          for (ir::Value* w : g_.consumers(v)[0]->outputs)
            if (chosen.count(w)) wide_.insert(w);
      }
    }
  const auto& shares = o_.shares_input_params.empty() ? kSharesInputParams : o_.shares_input_params;
  QT_RETURN_IF_ERROR(choose_group_params(group_activations(quantized_nodes, chosen, shares, o_.same_params)));
  for (ir::Value* v : activations) QT_RETURN_IF_ERROR(quantize_activation(v));
  for (const Requant& r : requant_) QT_RETURN_IF_ERROR(insert_requant(r));
  for (ir::Node* n : quantized_nodes) {
    const int w = weight_input(n);
    if (w > 0 && static_cast<int>(n->inputs.size()) > w) QT_RETURN_IF_ERROR(quantize_weight(n, static_cast<size_t>(w), first_layer.count(n) > 0));
  }
  g_.remove_unused_values();
  QT_RETURN_IF_ERROR(g_.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g_));
  return report_;
}

}  // namespace

int64_t float_weight_bytes(const ir::Node& n, size_t i) {
  const bool recurrent = n.domain.empty() && (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN");
  const Tensor* t = i < n.inputs.size() ? ir::constant_data(n.inputs[i]) : nullptr;
  if (!t || t->dtype() != DType::Float32 || t->rank() < 2 || (recurrent && i != 1 && i != 2)) return 0;
  return static_cast<int64_t>(t->byte_size());
}

WeightCoverage weight_coverage(const QuantizeReport& report) {
  WeightCoverage c;
  for (const NodeDecision& n : report.nodes) {
    c.total += n.weight_bytes + n.float_bytes;
    if (n.weight_bytes > 0 && n.quantized) c.quantized += n.weight_bytes;
    else if (n.weight_bytes > 0) c.float_by_reason[n.op_type + ": " + n.reason] += n.weight_bytes;
    if (n.float_bytes > 0) c.float_by_reason[n.op_type + ": constant input other than the weight stays float"] += n.float_bytes;
  }
  return c;
}

OpsetNeed qdq_opset_need(const QuantizeOptions& o) {
  // QuantizeLinear/DequantizeLinear-10; DequantizeLinear-13 added `axis`.
  const bool any_per_channel = o.per_channel || std::any_of(o.per_channel_by_op.begin(), o.per_channel_by_op.end(),
                                                            [](const auto& kv) { return kv.second; });
  if (!any_per_channel) return {10, 10, "QuantizeLinear/DequantizeLinear", ""};
  return {10, 13, "per-channel DequantizeLinear", "weights stay per tensor"};
}

Expected<QuantizeReport> insert_qdq(ir::Graph& graph, const profile::Profile& profile, const QuantizeOptions& options) {
  QdqBuilder builder(graph, profile, options);
  return builder.run();
}

}  // namespace quant::passes
