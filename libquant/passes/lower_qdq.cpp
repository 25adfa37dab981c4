#include "libquant/passes/lower_qdq.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "libquant/kernels/quantize.h"
#include "libquant/passes/graph_edit.h"

namespace quant::passes {
namespace {

bool is_node(const ir::Node* n, const char* op) { return n && n->op_type == op; }
bool is_q(const ir::Node* n) { return is_node(n, "QuantizeLinear"); }
bool is_dq(const ir::Node* n) { return is_node(n, "DequantizeLinear"); }

// Two constant values holding the same tensor (type, shape and bytes).
bool same_constant(const ir::Value* a, const ir::Value* b) {
  const Tensor* x = ir::constant_data(a);
  const Tensor* y = ir::constant_data(b);
  return x && y && x->dtype() == y->dtype() && x->shape() == y->shape() &&
         std::memcmp(x->raw(), y->raw(), x->byte_size()) == 0;
}

bool is_8bit_type(DType t) { return t == DType::UInt8 || t == DType::Int8; }
bool is_quant_type(DType t) { return is_8bit_type(t) || t == DType::UInt16 || t == DType::Int16; }

// The DequantizeLinear producing `v` (ai.onnx or com.microsoft) with a zero
// point, or nullptr.
ir::Node* dq_of(const ir::Value* v) {
  ir::Node* p = v ? v->producer : nullptr;
  return is_dq(p) && p->inputs.size() >= 3 && p->inputs[2] ? p : nullptr;
}

// A quantized tensor as a DQ or Q node sees it: data, scale, zero point, with
// constant per-tensor parameters (activations are quantized per tensor).
struct QTriple {
  ir::Value* data = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* zero_point = nullptr;
  DType qtype = DType::Undefined;
  std::vector<ir::Value*> values() const { return {data, scale, zero_point}; }
};

std::optional<QTriple> per_tensor_params(const ir::Node& qdq) {
  const Tensor* s = ir::constant_data(qdq.input(1));
  const Tensor* z = ir::constant_data(qdq.input(2));
  if (!s || !z || s->size() != 1 || z->size() != 1 || s->dtype() != DType::Float32 || !is_quant_type(z->dtype()))
    return std::nullopt;
  return QTriple{qdq.inputs[0], qdq.inputs[1], qdq.inputs[2], z->dtype()};
}

bool same_params(const QTriple& a, const QTriple& b) {
  return same_constant(a.scale, b.scale) && same_constant(a.zero_point, b.zero_point);
}

float scalar_of(const ir::Value* v) { return static_cast<float>(ir::constant_data(v)->as_double(0)); }

// Q(x) under `p`'s parameters, exactly as QuantizeLinear computes it.
Tensor quantize_scalar(float x, const QTriple& p) {
  Tensor out(p.qtype, {});
  const float scale = scalar_of(p.scale);
  const Tensor& zp = *ir::constant_data(p.zero_point);
  if (p.qtype == DType::UInt8) kernels::quantize_linear<uint8_t>(&x, out.data<uint8_t>(), 1, 1, 1, &scale, zp.data<uint8_t>(), 0, 1);
  if (p.qtype == DType::Int8) kernels::quantize_linear<int8_t>(&x, out.data<int8_t>(), 1, 1, 1, &scale, zp.data<int8_t>(), 0, 1);
  if (p.qtype == DType::UInt16) kernels::quantize_linear<uint16_t>(&x, out.data<uint16_t>(), 1, 1, 1, &scale, zp.data<uint16_t>(), 0, 1);
  if (p.qtype == DType::Int16) kernels::quantize_linear<int16_t>(&x, out.data<int16_t>(), 1, 1, 1, &scale, zp.data<int16_t>(), 0, 1);
  return out;
}

// Bounds of a Relu/Clip as (lo, hi); nullopt when a bound is not a constant.
std::optional<std::pair<std::optional<float>, std::optional<float>>> activation_bounds(const ir::Node& act) {
  if (act.op_type == "Relu") return std::make_pair(std::optional<float>(0.0f), std::optional<float>());
  std::optional<float> lo, hi;
  for (size_t k = 1; k <= 2; ++k) {
    if (!act.input(k)) continue;
    const Tensor* t = ir::constant_data(act.input(k));
    if (!t || t->size() != 1) return std::nullopt;
    (k == 1 ? lo : hi) = static_cast<float>(t->as_double(0));
  }
  // Clip before opset 11 has min/max attributes.
  if (const ir::Attribute* a = act.find_attribute("min")) lo = a->f;
  if (const ir::Attribute* a = act.find_attribute("max")) hi = a->f;
  return std::make_pair(lo, hi);
}

// Whether Relu/Clip `act` changes nothing once its output is saturated by Q
// (`q` = the Q's parameters). Exact: Q is monotone, so Q(clip(x, lo, hi)) =
// clip(Q(x), Q(lo), Q(hi)), and that is Q(x) for every x exactly when
// Q(lo) <= qmin and Q(hi) >= qmax. (A range test in float, scale * (qmax - zp)
// <= hi, misses a Relu6 whose profiled max is 6: scale * 255 lands a rounding
// above 6 while Q(6) is still 255. ONNX Runtime's ClipQuantFusion allows one
// float epsilon for that reason; the quantized bounds need no tolerance.)
bool activation_implied(const ir::Node& act, const QTriple& q) {
  auto bounds = activation_bounds(act);
  if (!bounds) return false;
  auto r = int_range(q.qtype);
  if (bounds->first && quantize_scalar(*bounds->first, q).as_int64(0) > r->min) return false;
  if (bounds->second && quantize_scalar(*bounds->second, q).as_int64(0) < r->max) return false;
  return true;
}

// Unary element-wise float ops that the interpreter lowers to a lookup table.
const std::set<std::string>& table_ops() {
  static const std::set<std::string> ops = {
      "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Relu", "Clip", "Elu", "Selu", "Celu", "Gelu",
      "Softplus", "Softsign", "Mish", "Exp", "Log", "Erf", "Neg", "Abs", "Sqrt", "Reciprocal", "ThresholdedRelu",
      "Sin", "Cos", "Atan", "Floor", "Ceil", "Round", "Sign"};
  return ops;
}

// Where a node's float output is quantized.
struct OutputMatch {
  ir::Node* q = nullptr;    // its QuantizeLinear (nullptr: the output stays float)
  ir::Node* act = nullptr;  // a Relu/Clip between the node and q
  bool act_implied = false; // q's saturation already does what act does
  QTriple params;           // q's parameters
};

class Lowerer {
 public:
  Lowerer(ir::Graph& g, const LowerOptions& o) : g_(g), o_(o) {}
  Expected<Lowering> run();

 private:
  bool interp() const { return o_.target == LowerTarget::Interpreter; }
  // Whether 16-bit products are lowered (LowerOptions::wide_products).
  bool wide() const { return interp() && o_.wide_products; }
  // Why a Conv / MatMul / Gemm reading an `in`-typed activation cannot write
  // m's output; empty when it can: 8-bit in, 8-bit out, or (wide()) a 16-bit
  // output of the input's type.
  std::string product_output_reason(const ir::Node& n, const OutputMatch& m, DType in) const;
  bool available(const std::string& domain, const std::string& op) const {
    return !o_.has_kernel || o_.has_kernel(domain, op);
  }
  std::string missing_kernel(const std::string& domain, const std::string& op) const {
    return "the interpreter has no kernel for " + (domain.empty() ? "" : domain + ".") + op;
  }

  // Why `n` stays float; empty when it was lowered.
  std::string lower(ir::Node* n);
  std::string lower_conv_matmul(ir::Node* n, const OutputMatch& m);
  std::string lower_gemm(ir::Node* n, const OutputMatch& m);
  std::string lower_binary(ir::Node* n, const OutputMatch& m);
  std::string lower_pool(ir::Node* n, const OutputMatch& m);
  std::string lower_concat(ir::Node* n, const OutputMatch& m);
  std::string lower_softmax(ir::Node* n, const OutputMatch& m);
  std::string lower_unary(ir::Node* n, const OutputMatch& m);
  std::string lower_move(ir::Node* n, const OutputMatch& m);

  OutputMatch output_match(const ir::Node& n) const;
  // Per-tensor parameters of the DQ feeding input i; 8-bit only unless `wide`.
  std::optional<QTriple> input_params(const ir::Node& n, size_t i, bool wide = false) const;
  std::string input_reason(const ir::Node& n, size_t i, bool wide = false) const;
  std::string output_reason(const ir::Node& n, const OutputMatch& m, bool wide = false) const;

  // Replaces `n` (and m.act and m.q) by `op_type` reading `inputs` and writing
  // the Q's integer output (or n's float output when m.q is null).
  void replace(ir::Node* n, const OutputMatch& m, const std::string& op_type, const std::string& domain,
               std::vector<ir::Value*> inputs, std::map<std::string, ir::Attribute> attributes);
  std::optional<std::pair<int64_t, int64_t>> folded_bounds(const std::string& op_type, const OutputMatch& m) const;
  // Records `n` as lowered to `what` and removes it with m.q and m.act.
  void finish(ir::Node* n, const OutputMatch& m, const std::string& what);
  // Emits the integer form of Relu/Clip `act` from `in` to `out` (both with
  // `p`'s parameters) before `before`: a Clip on the integer data, or a table.
  void emit_activation(ir::Node* before, const ir::Node& act, const QTriple& p, ir::Value* in, ir::Value* out);
  ir::Node* emit_lookup(ir::Node* before, const std::string& name, const std::string& float_op,
                        const std::map<std::string, ir::Attribute>& attributes, const QTriple& x, const QTriple& y,
                        std::vector<ir::Value*> extra_inputs, ir::Value* out);
  ir::Value* add_constant(const std::string& base, Tensor t);
  ir::Value* add_int_value(const std::string& base, const ir::Value& like, DType dtype);
  void remove_dead_qdq();

  ir::Graph& g_;
  const LowerOptions& o_;
  Lowering result_;
  // Nodes replace() deleted: the precomputed order still points at them.
  std::set<const ir::Node*> removed_;
  // Outputs of the DequantizeLinear nodes whose int8 Q -> DQ pair ONNX
  // Runtime rewrites to uint8 (u8_rewritten_pairs), found before lowering.
  std::set<const ir::Value*> u8_pairs_;
};

// ONNX Runtime's QDQS8ToU8Transformer (onnxruntime/core/optimizer/
// qdq_transformer/qdq_s8_to_u8.cc, 1.20) rewrites a QuantizeLinear whose
// output has one consumer, a DequantizeLinear, both with the same scalar int8
// zero point, to uint8 + 128: the DQ outputs of such pairs. An int8 tensor
// that a DQ reads from any other producer (a data-movement op on int8 data,
// a graph input) stays int8, and ONNX Runtime multiplies it with its exact
// S8S8 kernels.
std::set<const ir::Value*> u8_rewritten_pairs(const ir::Graph& g) {
  std::set<const ir::Value*> out;
  auto int8_zero_point = [](const ir::Node& n) -> std::optional<int64_t> {
    const Tensor* z = n.inputs.size() == 3 ? ir::constant_data(n.inputs[2]) : nullptr;
    if (!z || z->size() != 1 || z->dtype() != DType::Int8) return std::nullopt;
    return z->as_int64(0);
  };
  for (const auto& dq : g.nodes()) {
    // Q and DQ of ai.onnx or com.microsoft (QDQ::MatchQNode / MatchDQNode).
    auto qdq_domain = [](const ir::Node& n) { return n.domain.empty() || n.domain == "com.microsoft"; };
    if (!is_dq(dq.get()) || !qdq_domain(*dq) || dq->outputs.empty()) continue;
    const ir::Value* x = dq->input(0);
    const ir::Node* q = x ? x->producer : nullptr;
    if (!is_q(q) || !qdq_domain(*q) || g.is_graph_output(x) || g.consumers(x).size() != 1) continue;
    const auto qz = int8_zero_point(*q), dz = int8_zero_point(*dq);
    if (qz && dz && *qz == *dz) out.insert(dq->outputs[0]);
  }
  return out;
}

std::optional<QTriple> Lowerer::input_params(const ir::Node& n, size_t i, bool wide) const {
  ir::Node* d = dq_of(n.input(i));
  if (!d || d->find_attribute("block_size")) return std::nullopt;
  auto p = per_tensor_params(*d);
  if (!p || (!wide && !is_8bit_type(p->qtype))) return std::nullopt;
  return p;
}

std::string Lowerer::input_reason(const ir::Node& n, size_t i, bool wide) const {
  const ir::Value* v = n.input(i);
  const std::string name = v ? "'" + v->name() + "'" : std::to_string(i);
  ir::Node* d = dq_of(v);
  if (!d) {
    if (v && v->producer) return "input " + name + " is not quantized (" + v->producer->describe() + " computes it)";
    return "input " + name + " is float (not dequantized from an integer tensor)";
  }
  auto p = per_tensor_params(*d);
  if (!p) return "input " + name + " is not quantized per tensor with constant parameters";
  if (!wide && !is_8bit_type(p->qtype))
    return "input " + name + " is " + std::string(dtype_name(p->qtype)) + "; the integer " + n.op_type + " takes 8-bit tensors";
  return "input " + name + " cannot be lowered";
}

std::string Lowerer::output_reason(const ir::Node& n, const OutputMatch& m, bool wide) const {
  const ir::Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y) return "node has no output";
  if (m.q && !wide && !is_8bit_type(m.params.qtype))
    return "output '" + y->name() + "' is quantized to " + std::string(dtype_name(m.params.qtype)) + "; the integer " +
           n.op_type + " writes 8-bit tensors";
  if (g_.is_graph_output(y)) return "output '" + y->name() + "' is a float graph output";
  return "output '" + y->name() + "' is not quantized (read by float ops)";
}

std::string Lowerer::product_output_reason(const ir::Node& n, const OutputMatch& m, DType in) const {
  if (!m.q) return output_reason(n, m);
  if (is_8bit_type(in)) return is_8bit_type(m.params.qtype) ? "" : output_reason(n, m);
  if (m.params.qtype == in) return "";
  return "input is " + std::string(dtype_name(in)) + " and output '" + n.outputs[0]->name() + "' " +
         std::string(dtype_name(m.params.qtype)) + ": the 16-bit integer " + n.op_type + " writes its input's type";
}

OutputMatch Lowerer::output_match(const ir::Node& n) const {
  OutputMatch m;
  ir::Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y || g_.is_graph_output(y)) return m;
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] && (!g_.consumers(n.outputs[k]).empty() || g_.is_graph_output(n.outputs[k]))) return m;
  auto sole_q = [&](ir::Value* v) -> ir::Node* {
    if (!v || g_.is_graph_output(v)) return nullptr;
    auto users = g_.consumers(v);
    return users.size() == 1 && is_q(users[0]) && users[0]->inputs.size() >= 3 && users[0]->inputs[2] &&
                   users[0]->inputs[0] == v
               ? users[0]
               : nullptr;
  };
  ir::Node* act = nullptr;
  ir::Node* q = sole_q(y);
  if (!q) {
    auto users = g_.consumers(y);
    if (users.size() != 1 || !users[0]->domain.empty() || (users[0]->op_type != "Relu" && users[0]->op_type != "Clip") ||
        users[0]->inputs[0] != y)
      return m;
    act = users[0];
    q = sole_q(act->outputs.empty() ? nullptr : act->outputs[0]);
  }
  if (!q || q->find_attribute("block_size")) return {};
  auto p = per_tensor_params(*q);
  if (!p) return {};
  m.q = q;
  m.params = *p;
  m.act = act;
  if (act) {
    m.act_implied = activation_implied(*act, *p);
    // A Relu/Clip that saturation does not imply: only the interpreter
    // lowers it, and only with constant bounds.
    if (!m.act_implied && (!interp() || !activation_bounds(*act))) return {};
  }
  return m;
}

ir::Value* Lowerer::add_constant(const std::string& base, Tensor t) {
  return passes::add_constant(g_, base, std::move(t));
}

ir::Value* Lowerer::add_int_value(const std::string& base, const ir::Value& like, DType dtype) {
  ir::Value* v = g_.add_value(g_.unique_name(base));
  v->dtype = dtype;
  v->has_shape = like.has_shape;
  v->shape = like.shape;
  v->dim_names = like.dim_names;
  return v;
}

ir::Node* Lowerer::emit_lookup(ir::Node* before, const std::string& name, const std::string& float_op,
                               const std::map<std::string, ir::Attribute>& attributes, const QTriple& x,
                               const QTriple& y, std::vector<ir::Value*> extra_inputs, ir::Value* out) {
  std::vector<ir::Value*> ins{x.data, x.scale, x.zero_point, y.scale, y.zero_point};
  ins.insert(ins.end(), extra_inputs.begin(), extra_inputs.end());
  ir::Node* l = g_.insert_node(before, "QLinearLookup", std::move(ins), {out}, name, "ai.qtool");
  l->attributes = attributes;
  l->attributes["op_type"] = ir::Attribute::of_string(float_op);
  g_.opset_imports.try_emplace("ai.qtool", 1);
  return l;
}

void Lowerer::emit_activation(ir::Node* before, const ir::Node& act, const QTriple& p, ir::Value* in, ir::Value* out) {
  // ONNX Clip takes 8- and 16-bit integer types from opset 12.
  if (g_.opset() >= 12 && available("", "Clip")) {
    auto bounds = *activation_bounds(act);
    std::vector<ir::Value*> ins{in, nullptr, nullptr};
    if (bounds.first) ins[1] = add_constant(act.name + "_min_quantized", quantize_scalar(*bounds.first, p));
    if (bounds.second) ins[2] = add_constant(act.name + "_max_quantized", quantize_scalar(*bounds.second, p));
    while (ins.back() == nullptr) ins.pop_back();
    g_.insert_node(before, "Clip", ins, {out}, act.name, "");
    return;
  }
  std::vector<ir::Value*> extra(act.inputs.begin() + 1, act.inputs.end());
  emit_lookup(before, act.name, act.op_type, act.attributes, QTriple{in, p.scale, p.zero_point, p.qtype}, p, extra, out);
}

// The bounds of Relu/Clip `act` quantized with `p` (the type's limits where
// a bound is absent), when the interpreter's lowering folds it into the
// output clamp of `op_type`.
std::optional<std::pair<int64_t, int64_t>> Lowerer::folded_bounds(const std::string& op_type, const OutputMatch& m) const {
  if (!interp() || !o_.fold_activations || !m.act || m.act_implied || !m.q) return std::nullopt;
  if (op_type != "QLinearConv" && op_type != "QLinearMatMul") return std::nullopt;
  auto bounds = activation_bounds(*m.act);
  auto r = int_range(m.params.qtype);
  if (!bounds || !r) return std::nullopt;
  const int64_t lo = bounds->first ? quantize_scalar(*bounds->first, m.params).as_int64(0) : r->min;
  const int64_t hi = bounds->second ? quantize_scalar(*bounds->second, m.params).as_int64(0) : r->max;
  if (lo > hi) return std::nullopt;  // Clip with min > max: left to the Clip kernel's rule
  return std::make_pair(lo, hi);
}

void Lowerer::replace(ir::Node* n, const OutputMatch& m, const std::string& op_type, const std::string& domain,
                      std::vector<ir::Value*> inputs, std::map<std::string, ir::Attribute> attributes) {
  const auto folded = folded_bounds(op_type, m);
  const bool clamp = m.act && !m.act_implied && !folded;
  ir::Value* out = m.q ? m.q->outputs[0] : n->outputs[0];
  ir::Value* op_out = out;
  // An activation saturation does not imply runs on the integer output: the
  // op writes the pre-activation tensor, named after its float twin.
  if (clamp) op_out = add_int_value(m.act->inputs[0]->name() + "_quantized", *m.act->inputs[0], m.params.qtype);
  std::string what = (domain.empty() ? "" : domain + ".") + op_type;
  if (m.act && m.act_implied) what += " (" + m.act->op_type + " implied by saturation)";
  else if (folded) what += " (" + m.act->op_type + " folded into the output clamp)";
  else if (m.act) what += " + integer " + m.act->op_type;
  ir::Node* lowered = g_.insert_node(n, op_type, std::move(inputs), {op_out}, n->name, domain);
  lowered->attributes = std::move(attributes);
  // The interpreter computes as a target does; ONNX Runtime treats an op it
  // fused from Q/DQ differently from one written as QOperator (its int8
  // activations are rewritten to uint8 on x86, interp::SessionOptions).
  // qdq_fused: ONNX Runtime multiplies this op's int8 activation (input 0) as
  // uint8 + 128 (its Q -> DQ pair is rewritten, u8_rewritten_pairs).
  if (interp() && u8_pairs_.count(n->input(0))) lowered->attributes["qdq_fused"] = ir::Attribute::of_int(1);
  // A Relu/Clip that the output's saturation does not imply keeps ONNX
  // Runtime from fusing a Conv: its QDQ Conv selector wants the Q right after
  // the Conv, and ReluQuantFusion / ClipQuantFusion remove the activation
  // only where Q's range implies it (onnxruntime/core/optimizer/
  // qdq_transformer/relu_quantizelinear.cc, clip_quantizelinear.cc, 1.20).
  // The Conv then runs in float on dequantized values there (FusedConv in its
  // optimized graph), exact up to float rounding, so a saturating target's
  // products do not apply to it (interp/dot_target.h). Gemm and MatMul are
  // fused all the same, with a float output (QGemm) before the activation.
  if (interp() && op_type == "QLinearConv" && m.act && !m.act_implied)
    lowered->attributes["qdq_runtime_float"] = ir::Attribute::of_int(1);
  if (folded) {
    // Clamping the integer output to [Q(lo), Q(hi)] inside the requantization
    // is the integer Clip after it (kernels/requant.h, Requantizer::clamp_lo).
    lowered->attributes["activation_min"] = ir::Attribute::of_int(folded->first);
    lowered->attributes["activation_max"] = ir::Attribute::of_int(folded->second);
  }
  if (clamp) emit_activation(n, *m.act, m.params, op_out, out);
  finish(n, m, what);
}

void Lowerer::finish(ir::Node* n, const OutputMatch& m, const std::string& what) {
  result_.notes.push_back(n->describe() + " -> " + what);
  result_.lowered[n->name] = what;
  for (ir::Node* dead : {m.q, m.act, n}) {
    if (!dead) continue;
    removed_.insert(dead);
    g_.remove_node(dead);
  }
}

std::string Lowerer::lower_conv_matmul(ir::Node* n, const OutputMatch& m) {
  const bool conv = n->op_type == "Conv";
  const std::string op = conv ? "QLinearConv" : "QLinearMatMul";
  auto x = input_params(*n, 0, wide());
  if (!x) return input_reason(*n, 0, wide());
  ir::Node* wd = dq_of(n->input(1));
  if (!wd || wd->find_attribute("block_size")) return input_reason(*n, 1);
  const Tensor* ws = ir::constant_data(wd->input(1));
  const Tensor* wz = ir::constant_data(wd->input(2));
  const Tensor* w = ir::constant_data(wd->input(0));
  if (!ws || !wz || !is_8bit_type(wz->dtype()))
    return "weight '" + n->input(1)->name() + "' is not 8-bit with constant parameters";
  // The interpreter also multiplies two activations (attention's Q K^T);
  // ONNX Runtime's QDQ MatMul fusion does too, but qconvert's QOperator output
  // keeps its historical form (constant weights only).
  if (!w && (conv || !interp() || ws->size() != 1)) return "weight '" + n->input(1)->name() + "' is not a constant";
  if (ws->size() > 1) {
    const int64_t rank = w->rank();
    int64_t axis = wd->attr_int("axis", 1);
    if (axis < 0) axis += rank;
    // QLinearConv: per output channel (axis 0); QLinearMatMul (opset 10):
    // per column of a 2-D b.
    if (ws->rank() != 1 || (conv && axis != 0) || (!conv && (rank != 2 || axis != 1)))
      return "weight '" + n->input(1)->name() + "' is quantized per channel along axis " + std::to_string(axis) + ", which " +
             op + " does not take";
  }
  if (std::string why = product_output_reason(*n, m, x->qtype); !why.empty()) return why;
  if (!available("", op)) return missing_kernel("", op);
  std::vector<ir::Value*> ins = x->values();
  ins.insert(ins.end(), {wd->inputs[0], wd->inputs[1], wd->inputs[2], m.params.scale, m.params.zero_point});
  if (conv && n->input(2)) {
    ir::Node* bd = dq_of(n->input(2));
    const Tensor* b = bd ? ir::constant_data(bd->input(0)) : nullptr;
    if (!b || b->dtype() != DType::Int32) return "bias '" + n->input(2)->name() + "' is not an int32 constant";
    ins.push_back(bd->inputs[0]);
  }
  replace(n, m, op, "", ins, conv ? n->attributes : std::map<std::string, ir::Attribute>{});
  return "";
}

// Gemm -> com.microsoft QGemm: Y = alpha * A'B' + beta * C with C int32 at
// scale alpha / beta * a_scale * b_scale. qconvert quantizes the bias at
// a_scale * b_scale, so alpha must equal beta. Without a Q the output stays
// float (QGemm without y_scale), as ONNX Runtime fuses a model's last Gemm.
std::string Lowerer::lower_gemm(ir::Node* n, const OutputMatch& m) {
  if (!interp()) return "Gemm stays in QDQ form for ONNX Runtime";
  auto a = input_params(*n, 0, wide());
  if (!a) return input_reason(*n, 0, wide());
  ir::Node* bd = dq_of(n->input(1));
  const Tensor* b = bd ? ir::constant_data(bd->input(0)) : nullptr;
  if (!b || bd->find_attribute("block_size") || b->rank() != 2) return "weight '" + n->input(1)->name() + "' is not a constant 2-D dequantized tensor";
  const Tensor* bs = ir::constant_data(bd->input(1));
  const Tensor* bz = ir::constant_data(bd->input(2));
  if (!bs || !bz || !is_8bit_type(bz->dtype())) return "weight '" + n->input(1)->name() + "' is not 8-bit with constant parameters";
  const bool trans_b = n->attr_int("transB", 0) != 0;
  if (bs->size() > 1) {
    int64_t axis = bd->attr_int("axis", 1);
    if (axis < 0) axis += 2;
    // QGemm's b_scale is per column of op(B): axis 1 of B, or axis 0 with transB.
    if (bs->rank() != 1 || axis != (trans_b ? 0 : 1))
      return "weight '" + n->input(1)->name() + "' is quantized per channel along axis " + std::to_string(axis) +
             ", not per output column";
  }
  const float alpha = n->attr_float("alpha", 1.0f), beta = n->attr_float("beta", 1.0f);
  ir::Value* bias = nullptr;
  if (n->input(2) && beta != 0.0f) {
    ir::Node* cd = dq_of(n->input(2));
    const Tensor* c = cd ? ir::constant_data(cd->input(0)) : nullptr;
    const Tensor* cz = cd ? ir::constant_data(cd->input(2)) : nullptr;
    if (!c || c->dtype() != DType::Int32 || !cz) return "bias '" + n->input(2)->name() + "' is not an int32 constant";
    for (int64_t i = 0; i < cz->size(); ++i)
      if (cz->as_int64(i) != 0) return "bias '" + n->input(2)->name() + "' has a non-zero zero point";
    if (alpha != beta) return "alpha != beta: the int32 bias would need scale alpha / beta * a_scale * b_scale";
    bias = cd->inputs[0];
  }
  if (m.q) {
    if (std::string why = product_output_reason(*n, m, a->qtype); !why.empty()) return why;
  }
  if (!m.q && (n->outputs.empty() || !n->outputs[0])) return "node has no output";
  if (!available("com.microsoft", "QGemm")) return missing_kernel("com.microsoft", "QGemm");
  std::vector<ir::Value*> ins = a->values();
  ins.insert(ins.end(), {bd->inputs[0], bd->inputs[1], bd->inputs[2], bias});
  if (m.q) ins.insert(ins.end(), {m.params.scale, m.params.zero_point});
  while (ins.back() == nullptr) ins.pop_back();
  std::map<std::string, ir::Attribute> attrs;
  for (const char* k : {"alpha", "transA", "transB"})
    if (const ir::Attribute* at = n->find_attribute(k)) attrs[k] = *at;
  if (bias) attrs["beta"] = ir::Attribute::of_float(beta);
  const std::string name = n->name;
  replace(n, m, "QGemm", "com.microsoft", ins, attrs);
  // Integer data leaves here without a DequantizeLinear: say so in the plan.
  if (!m.q) result_.lowered[name] += " with float output";
  g_.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

// ONNX Runtime's com.microsoft QLinear ops (1.20 contrib schemas) take one
// integer type for every data input and the output; symmetric-uint8 can give a
// uint8 tensor (non-negative) next to an int8 one: such a node stays float.
std::string one_type_reason(const std::string& op) {
  return "inputs and output have different integer types (" + op + " takes one type for all of them)";
}

std::string Lowerer::lower_binary(ir::Node* n, const OutputMatch& m) {
  const std::string op = "QLinear" + n->op_type;
  for (size_t i = 0; i < 2; ++i)
    if (!input_params(*n, i)) return input_reason(*n, i);
  if (!m.q || !is_8bit_type(m.params.qtype)) return output_reason(*n, m);
  if (input_params(*n, 0)->qtype != m.params.qtype || input_params(*n, 1)->qtype != m.params.qtype) return one_type_reason(op);
  if (!available("com.microsoft", op)) return missing_kernel("com.microsoft", op);
  std::vector<ir::Value*> ins = input_params(*n, 0)->values();
  for (ir::Value* v : input_params(*n, 1)->values()) ins.push_back(v);
  ins.insert(ins.end(), {m.params.scale, m.params.zero_point});
  replace(n, m, op, "com.microsoft", ins, {});
  g_.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

std::string Lowerer::lower_pool(ir::Node* n, const OutputMatch& m) {
  const std::string op = "QLinear" + n->op_type;
  auto x = input_params(*n, 0);
  if (!x) return input_reason(*n, 0);
  if (!m.q || !is_8bit_type(m.params.qtype) || (m.act && !interp())) return output_reason(*n, m);
  if (x->qtype != m.params.qtype) return one_type_reason(op);
  if (!available("com.microsoft", op)) return missing_kernel("com.microsoft", op);
  std::vector<ir::Value*> ins = x->values();
  ins.insert(ins.end(), {m.params.scale, m.params.zero_point});
  auto attrs = n->attributes;
  attrs["channels_last"] = ir::Attribute::of_int(0);
  replace(n, m, op, "com.microsoft", ins, attrs);
  g_.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

std::string Lowerer::lower_concat(ir::Node* n, const OutputMatch& m) {
  std::vector<ir::Value*> ins{m.params.scale, m.params.zero_point};
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    auto t = input_params(*n, i);
    if (!t) return input_reason(*n, i);
    if (m.q && t->qtype != m.params.qtype) return one_type_reason("QLinearConcat");
    for (ir::Value* v : t->values()) ins.push_back(v);
  }
  if (!m.q || !is_8bit_type(m.params.qtype) || m.act) return output_reason(*n, m);
  if (!available("com.microsoft", "QLinearConcat")) return missing_kernel("com.microsoft", "QLinearConcat");
  replace(n, m, "QLinearConcat", "com.microsoft", ins, n->attributes);
  g_.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

// ONNX Runtime's QDQ optimizer (1.20, CPU provider) replaces 8-bit
// DequantizeLinear -> Softmax -> QuantizeLinear by com.microsoft QLinearSoftmax,
// whose table-and-divide arithmetic (kernels/qsoftmax.h) rounds differently
// from float Softmax + QuantizeLinear on a few % of the outputs; qrun lowers to
// the same op so that it matches ONNX Runtime (--no-lower keeps the float path).
std::string Lowerer::lower_softmax(ir::Node* n, const OutputMatch& m) {
  auto x = input_params(*n, 0);
  if (!x) return input_reason(*n, 0);
  if (!m.q || m.act || !is_8bit_type(m.params.qtype) || m.params.qtype != x->qtype) return output_reason(*n, m);
  if (!available("com.microsoft", "QLinearSoftmax")) return missing_kernel("com.microsoft", "QLinearSoftmax");
  std::vector<ir::Value*> ins = x->values();
  ins.insert(ins.end(), {m.params.scale, m.params.zero_point});
  auto attrs = n->attributes;
  attrs["opset"] = ir::Attribute::of_int(g_.opset());
  replace(n, m, "QLinearSoftmax", "com.microsoft", ins, attrs);
  g_.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

// ONNX Runtime: com.microsoft QLinearSigmoid / QLinearLeakyRelu. Interpreter:
// any table op through ai.qtool QLinearLookup (8- or 16-bit), Relu/Clip with
// unchanged parameters as an integer Clip.
std::string Lowerer::lower_unary(ir::Node* n, const OutputMatch& m) {
  const bool wide = interp();
  auto x = input_params(*n, 0, wide);
  if (!x) return input_reason(*n, 0, wide);
  if (!m.q || m.act || (!wide && !is_8bit_type(m.params.qtype))) return output_reason(*n, m, wide);
  if (!interp()) {
    const std::string op = "QLinear" + n->op_type;
    std::vector<ir::Value*> ins = x->values();
    ins.insert(ins.end(), {m.params.scale, m.params.zero_point});
    replace(n, m, op, "com.microsoft", ins, n->attributes);
    g_.opset_imports.try_emplace("com.microsoft", 1);
    return "";
  }
  std::vector<ir::Value*> extra(n->inputs.begin() + 1, n->inputs.end());
  for (ir::Value* v : extra)
    if (v && !ir::constant_data(v)) return "input '" + v->name() + "' is not a constant (a table needs fixed parameters)";
  const bool clamp = (n->op_type == "Relu" || n->op_type == "Clip") && same_params(*x, m.params) && g_.opset() >= 12 &&
                     activation_bounds(*n) && available("", "Clip");
  if (!clamp && !available("ai.qtool", "QLinearLookup")) return missing_kernel("ai.qtool", "QLinearLookup");
  ir::Value* out = m.q->outputs[0];
  const std::string name = n->name;
  std::string what;
  if (clamp) {
    emit_activation(n, *n, m.params, x->data, out);
    what = "integer Clip";
  } else {
    emit_lookup(n, name, n->op_type, n->attributes, *x, m.params, extra, out);
    what = "ai.qtool.QLinearLookup (" + std::to_string(1 << (8 * dtype_size(x->qtype))) + "-entry table)";
  }
  finish(n, m, what);
  return "";
}

// Data movement on the integer tensor. With equal parameters the op writes
// the Q's output; otherwise (interpreter) an identity table requantizes.
std::string Lowerer::lower_move(ir::Node* n, const OutputMatch& m) {
  const bool wide = interp() && n->op_type != "MaxPool";  // the integer MaxPool is 8-bit (ONNX opset 12)
  auto x = input_params(*n, 0, wide);
  if (!x) return input_reason(*n, 0, wide);
  if (!m.q || m.act || (!wide && !is_8bit_type(m.params.qtype))) return output_reason(*n, m, wide);
  const bool same = same_params(*x, m.params);
  if (!same && !interp()) return "input and output are quantized with different parameters";
  if (!same && !available("ai.qtool", "QLinearLookup")) return missing_kernel("ai.qtool", "QLinearLookup");
  std::vector<ir::Value*> ins = n->inputs;
  ins[0] = x->data;
  if (same) {
    replace(n, m, n->op_type, "", ins, n->attributes);
    return "";
  }
  ir::Value* out = m.q->outputs[0];
  ir::Value* moved = add_int_value(n->outputs[0]->name() + "_moved", *n->outputs[0], x->qtype);
  const std::string name = n->name;
  ir::Node* op = g_.insert_node(n, n->op_type, ins, {moved}, name, "");
  op->attributes = n->attributes;
  emit_lookup(n, g_.unique_name(name + "_requantize"), "Identity", {}, QTriple{moved, x->scale, x->zero_point, x->qtype},
              m.params, {}, out);
  const std::string what = n->op_type + " on integer data + ai.qtool.QLinearLookup (requantize)";
  finish(n, m, what);
  return "";
}

std::string Lowerer::lower(ir::Node* n) {
  const std::string& op = n->op_type;
  const OutputMatch m = output_match(*n);
  if (op == "Conv" || op == "MatMul") return lower_conv_matmul(n, m);
  if (op == "Gemm") return lower_gemm(n, m);
  if (op == "Add" || op == "Mul") return lower_binary(n, m);
  if (op == "GlobalAveragePool" || op == "AveragePool") return lower_pool(n, m);
  if (op == "Concat") return lower_concat(n, m);
  if (op == "Softmax") {
    if (!o_.onnxruntime_softmax) return "the target's integer Softmax is not ONNX Runtime's QLinearSoftmax: float between Q/DQ";
    return lower_softmax(n, m);
  }
  if (!interp() && (op == "Sigmoid" || op == "LeakyRelu")) return lower_unary(n, m);
  if (interp() && table_ops().count(op)) return lower_unary(n, m);
  if (moves_data_only(*n)) {
    static const std::set<std::string> kOnnxRuntimeMoves = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"};
    if (!interp() && !kOnnxRuntimeMoves.count(op)) return "no QOperator form";
    return lower_move(n, m);
  }
  if ((op == "Shape" || op == "Size") && interp()) {
    // Only the shape is read: the integer tensor has the same one.
    ir::Node* d = dq_of(n->input(0));
    if (!d) return input_reason(*n, 0, true);
    n->inputs[0] = d->inputs[0];
    result_.notes.push_back(n->describe() + " -> reads the integer tensor");
    result_.lowered[n->name] = op + " of the integer tensor";
    return "";
  }
  if (op == "ConvTranspose") return "no integer ConvTranspose kernel (ONNX Runtime's CPU provider has none either)";
  if (op == "Resize") return "Resize in " + n->attr_string("mode", "nearest") + " mode computes new values: no integer kernel";
  return "no integer kernel for " + op;
}

void Lowerer::remove_dead_qdq() {
  // Q/DQ nodes nothing reads any more, removed consumers first.
  std::map<const ir::Value*, int> uses;
  for (const auto& n : g_.nodes())
    for (const ir::Value* v : n->inputs)
      if (v) ++uses[v];
  std::vector<ir::Node*> order;
  for (const auto& n : g_.nodes()) order.push_back(n.get());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* n = *it;
    if (!is_q(n) && !is_dq(n)) continue;
    ir::Value* out = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!out || uses[out] > 0 || g_.is_graph_output(out)) continue;
    for (const ir::Value* v : n->inputs)
      if (v) --uses[v];
    g_.remove_node(n);
  }
}

Expected<Lowering> Lowerer::run() {
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());
  u8_pairs_ = u8_rewritten_pairs(g_);
  for (ir::Node* n : order) {
    if (removed_.count(n) || is_q(n) || is_dq(n) || !n->domain.empty() || n->op_type == "Constant") continue;
    std::string why = lower(n);
    if (!why.empty()) result_.float_reasons[n->name] = why;
  }
  remove_dead_qdq();
  g_.remove_unused_values();
  QT_RETURN_IF_ERROR(g_.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g_));
  return std::move(result_);
}

// Where the output parameters of an integer op are among its inputs.
std::optional<size_t> output_params_input(const ir::Node& n) {
  static const std::map<std::pair<std::string, std::string>, size_t> kAt = {
      {{"", "QuantizeLinear"}, 1},
      {{"com.microsoft", "QuantizeLinear"}, 1},
      {{"", "QLinearConv"}, 6},
      {{"", "QLinearMatMul"}, 6},
      {{"com.microsoft", "QLinearAdd"}, 6},
      {{"com.microsoft", "QLinearMul"}, 6},
      {{"com.microsoft", "QLinearAveragePool"}, 3},
      {{"com.microsoft", "QLinearGlobalAveragePool"}, 3},
      {{"com.microsoft", "QLinearSigmoid"}, 3},
      {{"com.microsoft", "QLinearLeakyRelu"}, 3},
      {{"com.microsoft", "QLinearConcat"}, 0},
      {{"com.microsoft", "QLinearSoftmax"}, 3},
      {{"com.microsoft", "QGemm"}, 7},
      {{"ai.qtool", "QLinearLookup"}, 3},
  };
  auto it = kAt.find({n.domain == "ai.onnx" ? "" : n.domain, n.op_type});
  if (it == kAt.end()) return std::nullopt;
  return it->second;
}

}  // namespace

bool moves_data_only(const ir::Node& n) {
  static const std::set<std::string> kOps = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "MaxPool",
                                             "Identity", "Slice", "Gather", "Expand", "Tile", "DepthToSpace",
                                             "SpaceToDepth", "Resize"};
  if (!n.domain.empty() || !kOps.count(n.op_type)) return false;
  if (n.op_type == "MaxPool" && n.outputs.size() > 1 && n.outputs[1]) return false;  // Indices
  if (n.op_type == "Resize" && n.attr_string("mode", "nearest") != "nearest") return false;
  return true;
}

Expected<Lowering> lower_qdq(ir::Graph& graph, const LowerOptions& options) {
  Lowerer l(graph, options);
  return l.run();
}

std::vector<QuantizedTensor> find_quantized_tensors(const ir::Graph& graph) {
  std::vector<QuantizedTensor> out;
  auto order = graph.topological_order();
  if (!order) return out;
  std::map<const ir::Value*, QuantizedTensor> params;
  const std::string suffix = "_quantized";
  for (const ir::Node* n : *order) {
    const ir::Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!y) continue;
    QuantizedTensor t;
    if (auto at = output_params_input(*n)) {
      const Tensor* s = ir::constant_data(n->input(*at));
      const Tensor* z = ir::constant_data(n->input(*at + 1));
      if (!s || s->size() != 1) continue;  // QGemm without y_scale writes float
      t.scale = static_cast<float>(s->as_double(0));
      t.qtype = z ? z->dtype() : DType::UInt8;
      t.zero_point = z && z->size() == 1 ? static_cast<int32_t>(z->as_int64(0)) : 0;
      if (z && z->size() != 1) continue;
    } else {
      const ir::Value* x = n->input(0);
      auto it = x ? params.find(x) : params.end();
      if (it == params.end() || !(moves_data_only(*n) || n->op_type == "Clip")) continue;
      t = it->second;
    }
    t.name = y->name();
    if (is_q(n) && n->input(0)) t.float_name = n->input(0)->name();
    else if (t.name.size() > suffix.size() && t.name.ends_with(suffix)) t.float_name = t.name.substr(0, t.name.size() - suffix.size());
    else t.float_name.clear();
    params[y] = t;
    if (!t.float_name.empty()) out.push_back(t);
  }
  return out;
}

bool activation_implied_by(const ir::Node& act, const ir::Node& q) {
  const auto p = per_tensor_params(q);
  return p && activation_implied(act, *p);
}

}  // namespace quant::passes
