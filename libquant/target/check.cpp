#include "libquant/target/check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "libquant/passes/k_order.h"
#include "libquant/target/qdq_params.h"

namespace quant::target {
namespace {

// A QOperator node: the float op it stands for and where its constant weight
// and its output's scale / zero point are (ONNX QLinearConv, QLinearMatMul;
// ONNX Runtime 1.20's com.microsoft contrib ops).
struct QOperatorLayout {
  const char* op;
  const char* float_op;
  int weight;     // input index of the weight (its scale and zero point follow); -1: none
  int out_scale;  // input index of y_scale (y_zero_point follows)
};
constexpr QOperatorLayout kQOperators[] = {
    {"QLinearConv", "Conv", 3, 6},          {"QLinearMatMul", "MatMul", 3, 6},
    {"QGemm", "Gemm", 3, 7},                {"QLinearAdd", "Add", -1, 6},
    {"QLinearMul", "Mul", -1, 6},           {"QLinearConcat", "Concat", -1, 0},
    {"QLinearAveragePool", "AveragePool", -1, 3}, {"QLinearGlobalAveragePool", "GlobalAveragePool", -1, 3},
    {"QLinearSigmoid", "Sigmoid", -1, 3},   {"QLinearLeakyRelu", "LeakyRelu", -1, 3},
    {"QLinearSoftmax", "Softmax", -1, 3},   {"QLinearReduceMean", "ReduceMean", -1, 3}};

const QOperatorLayout* qoperator_layout(const ir::Node& n) {
  for (const auto& l : kQOperators)
    if (n.op_type == l.op) return &l;
  return nullptr;
}

bool is_qoperator(const ir::Node& n) { return qoperator_layout(n) || n.op_type.rfind("QLinear", 0) == 0; }

// Dynamic and weight-only quantization: activations quantized at run time,
// which the "quantize" rules (static quantization) do not describe.
const std::set<std::string> kDynamicOps = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
                                           "DynamicQuantizeMatMul", "DynamicQuantizeLSTM", "MatMulNBits"};

const std::set<std::string> kWeightOps = {"Conv", "ConvTranspose", "Gemm", "MatMul"};

// The zero point of symmetric parameters: 0 for signed types, the middle
// code for unsigned ones (uint8 128, uint16 32768), as calib/params.h.
int64_t symmetric_zero(DType t) {
  auto r = int_range(t);
  return !r || r->min < 0 ? 0 : (r->max + 1) / 2;
}

bool power_of_two(double s) {
  int e = 0;
  return s > 0 && std::frexp(s, &e) == 0.5;
}

std::string type_name(DType t) { return std::string(dtype_name(t)); }

// The axis of a weight's output channels: Conv [M, C/g, k...] 0,
// ConvTranspose [C, M/g, k...] 1, Gemm N (0 with transB, else 1), MatMul
// [..., K, N] the last.
int64_t channel_axis(const std::string& op, const ir::Node& n, const Tensor& w) {
  if (op == "Conv") return 0;
  if (op == "ConvTranspose") return 1;
  if (op == "Gemm") return n.attr_int("transB", 0) ? 0 : 1;
  return w.rank() - 1;
}

class Checker {
 public:
  Checker(const ir::Graph& g, const TargetSpec& t) : g_(g), t_(t) {
    // Graph::consumers scans every node; the rules ask for readers of most values.
    for (const auto& n : g.nodes()) {
      auto read = [&](const ir::Value* v) {
        if (v && (readers_[v].empty() || readers_[v].back() != n.get())) readers_[v].push_back(n.get());
      };
      for (const ir::Value* v : n->inputs) read(v);
      for (const ir::Value* v : n->implicit_inputs) read(v);  // a subgraph reading it by name
    }
  }
  CheckResult run();

 private:
  void add(const ir::Node& n, const std::string& tensor, const std::string& rule, std::string found, std::string expected) {
    r_.violations.push_back({n.name, n.op_type, tensor, rule, std::move(found), std::move(expected)});
  }
  void not_checked(const ir::Node& n, const std::string& tensor) {
    r_.notes.push_back(n.describe() + ", tensor '" + tensor +
                       "': scale or zero point is not a constant (float32 scale) tensor; not checked");
  }

  const ir::Node* dq_of(const ir::Value* v) const { return v && is_dequantize(v->producer) ? v->producer : nullptr; }
  const ir::Node* activation_dq(const ir::Value* v) const {
    const ir::Node* dq = dq_of(v);
    return dq && dq->input(0) && !ir::constant_data(dq->input(0)) ? dq : nullptr;
  }
  const ir::Node* weight_dq(const ir::Value* v) const {
    const ir::Node* dq = dq_of(v);
    return dq && dq->input(0) && ir::constant_data(dq->input(0)) ? dq : nullptr;
  }
  const std::vector<const ir::Node*>& readers(const ir::Value* v) const {
    static const std::vector<const ir::Node*> kNone;
    auto it = v ? readers_.find(v) : readers_.end();
    return it == readers_.end() ? kNone : it->second;
  }
  std::vector<const ir::Node*> quantizers(const ir::Value* v) const {
    std::vector<const ir::Node*> out;
    for (const ir::Node* c : readers(v))
      if (is_quantize(c)) out.push_back(c);
    return out;
  }
  // The value whose Q an op's output gets: the output itself, or the output
  // of the Relu/Clip that is its one reader (the pair runs as one integer op).
  const ir::Value* quantized_output(const ir::Value* v) const {
    if (!v || !quantizers(v).empty()) return v;
    const auto& users = readers(v);
    if (users.size() == 1 && users[0]->domain.empty() && (users[0]->op_type == "Relu" || users[0]->op_type == "Clip") &&
        !users[0]->outputs.empty())
      return users[0]->outputs[0];
    return v;
  }
  // The float tensor a dequantized activation stands for: the input of its
  // QuantizeLinear (qconvert keeps the float names), else the integer tensor.
  static std::string float_name(const ir::Node& dq) {
    const ir::Value* x = dq.input(0);
    return is_quantize(x->producer) && x->producer->input(0) ? x->producer->input(0)->name() : x->name();
  }
  // A node reading a graph input through its Q/DQ (the first layers).
  bool reads_graph_input(const ir::Node& n) const {
    const ir::Value* v = n.input(0);
    for (int hops = 0; hops < 2 && v && (is_dequantize(v->producer) || is_quantize(v->producer)); ++hops) v = v->producer->input(0);
    return v && std::find(g_.inputs.begin(), g_.inputs.end(), v) != g_.inputs.end();
  }
  // DequantizeLinear -> n -> QuantizeLinear: in QDQ form the op runs quantized.
  bool runs_quantized(const ir::Node& n) const {
    if (is_quantize(&n) || is_dequantize(&n) || is_qoperator(n)) return false;
    bool reads = false, writes = false;
    for (const ir::Value* v : n.inputs) reads |= dq_of(v) != nullptr;
    for (const ir::Value* v : n.outputs) writes |= v && !quantizers(quantized_output(v)).empty();
    return reads && writes;
  }

  void check_activation(const ir::Node& n, const std::string& tensor, const StatedParams& p, const std::string& producer_op);
  void check_schema(const ir::Node& n, const std::string& tensor, const StatedParams& p, calib::Schema schema, const std::string& rule);
  void check_fixed(const ir::Node& n, const std::string& tensor, const StatedParams& p, const std::string& op);
  void check_quantized_group(const ir::Node& n);
  void check_qoperator(const ir::Node& n, const QOperatorLayout* l);
  void check_weight_of(const ir::Node& n);
  void check_weight(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q, const StatedParams& p);
  void check_weight_codes(const ir::Node& n, const std::string& tensor, const Tensor& q, const StatedParams& p, DType want,
                          const std::string& type_rule, int32_t m, const std::string& range_rule);
  void check_granularity(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q, const StatedParams& p);
  void check_pair_bound(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q, const StatedParams& p);
  void check_bias(const ir::Node& n);
  void check_weight_input(const ir::Node& n, int index);
  void check_shared(const ir::Node& n);
  void check_same(const ir::Node& n);
  void check_matmul_b(const ir::Node& n);
  void check_placement(const ir::Node& n);

  const ir::Graph& g_;
  const TargetSpec& t_;
  CheckResult r_;
  std::map<const ir::Value*, std::vector<const ir::Node*>> readers_;  // value -> the nodes reading it, in node order
  std::set<const ir::Node*> matmul_b_;  // Q/DQ nodes of MatMul B activations (quantize.matmul_activation_b)
};

void Checker::check_activation(const ir::Node& n, const std::string& tensor, const StatedParams& p, const std::string& producer_op) {
  if (!p.known) return not_checked(n, tensor);
  ++r_.checked["activations"];
  // An op with fixed output parameters: those fix the type too.
  if (t_.fixed_output_params.count(producer_op)) return check_fixed(n, tensor, p, producer_op);
  const bool eight_bit = dtype_size(t_.activations) == 1;
  bool zero_at_zero = true;
  for (int64_t z : p.zero_point) zero_at_zero &= z == 0;
  // symmetric-uint8: a non-negative tensor takes uint8 with zero point 0
  // whatever the 8-bit type (calib/params.h).
  const bool unsigned_ok = t_.schema == calib::Schema::SymmetricUInt8 && eight_bit && p.type == DType::UInt8 && zero_at_zero;
  if (unsigned_ok) return;
  // A layer moved to 16 bits (activations.mixed_type) is the target's too.
  if (p.type != t_.activations && p.type != t_.mixed_activations) {
    const bool alt = t_.schema == calib::Schema::SymmetricUInt8 && eight_bit && t_.activations != DType::UInt8;
    return add(n, tensor, "quantize.activations.type", type_name(p.type),
               type_name(t_.activations) + (alt ? " (or uint8 with zero point 0)" : ""));
  }
  check_schema(n, tensor, p, t_.schema, "quantize.activations.schema");
}

void Checker::check_schema(const ir::Node& n, const std::string& tensor, const StatedParams& p, calib::Schema schema,
                           const std::string& rule) {
  if (schema == calib::Schema::Asymmetric) return;
  const int64_t zero = symmetric_zero(p.type);
  for (int64_t z : p.zero_point)
    if (z != zero)
      return add(n, tensor, rule, "zero point " + std::to_string(z),
                 "zero point " + std::to_string(zero) + " (" + std::string(calib::schema_name(schema)) + ")");
  if (schema != calib::Schema::Power2Scale) return;
  for (double s : p.scale)
    if (!power_of_two(s)) return add(n, tensor, rule, "scale " + number(s), "a power of two (power2-scale)");
}

void Checker::check_fixed(const ir::Node& n, const std::string& tensor, const StatedParams& p, const std::string& op) {
  const FixedParams& f = t_.fixed_output_params.at(op);
  if (p.per_tensor() && close_scale(p.scale[0], f.scale) && p.zero_point[0] == f.zero_point) return;
  add(n, tensor, "quantize.fixed_output_params." + op, describe_params(p),
      "scale " + number(f.scale) + " zero point " + std::to_string(f.zero_point));
}

// quantize.format (QDQ groups on a qoperator target) and quantize.ops.
void Checker::check_quantized_group(const ir::Node& n) {
  if (!runs_quantized(n)) return;
  const std::string out = n.outputs.empty() || !n.outputs[0] ? "" : n.outputs[0]->name();
  if (t_.format == "qoperator")
    add(n, out, "quantize.format", "DequantizeLinear -> " + n.op_type + " -> QuantizeLinear (QDQ form)", "QOperator form");
  // In QDQ form an op outside the target's set is no error: the backend runs
  // DequantizeLinear -> op -> QuantizeLinear in float (qconvert writes such
  // islands itself where a float op sits between quantized ones). Say so.
  if (!t_.ops.empty() && std::find(t_.ops.begin(), t_.ops.end(), n.op_type) == t_.ops.end())
    r_.notes.push_back(n.describe() + " sits between DequantizeLinear and QuantizeLinear but is not in quantize.ops: "
                       "it runs float on this target");
}

void Checker::check_qoperator(const ir::Node& n, const QOperatorLayout* l) {
  const std::string out = n.outputs.empty() || !n.outputs[0] ? "" : n.outputs[0]->name();
  if (t_.format == "qdq")
    add(n, out, "quantize.format", n.op_type + " (QOperator form)", "QDQ form (QuantizeLinear / DequantizeLinear around float ops)");
  if (!l) return;
  if (!t_.ops.empty() && std::find(t_.ops.begin(), t_.ops.end(), l->float_op) == t_.ops.end())
    add(n, out, "quantize.ops", std::string(l->float_op) + " runs quantized (" + n.op_type + ")", "an op type of quantize.ops");
  // An integer graph input read directly: its parameters are the node's
  // (x, x_scale, x_zero_point first, except QLinearConcat's).
  const ir::Value* x = n.input(0);
  if (l->out_scale != 0 && x && !x->producer && !ir::constant_data(x))
    check_activation(n, x->name(), read_params(n.input(1), n.input(2), x->dtype, 1, -1), "");
  if (const ir::Value* scale = n.input(static_cast<size_t>(l->out_scale))) {
    const DType declared = n.outputs.empty() || !n.outputs[0] ? DType::Undefined : n.outputs[0]->dtype;
    const StatedParams p = read_params(scale, n.input(static_cast<size_t>(l->out_scale) + 1),
                                       declared == DType::Undefined ? DType::UInt8 : declared, 1, -1);
    check_activation(n, out, p, l->float_op);
  }
  if (l->weight < 0) return;
  const auto w = static_cast<size_t>(l->weight);
  const Tensor* q = n.input(w) ? ir::constant_data(n.input(w)) : nullptr;
  if (!q) return;  // QLinearMatMul of two activations
  StatedParams p = read_params(n.input(w + 1), n.input(w + 2), q->dtype(), channel_axis(l->float_op, n, *q), q->rank());
  if (!p.known) return not_checked(n, n.input(w)->name());
  p.type = q->dtype();
  check_weight(n, l->float_op, n.input(w)->name(), *q, p);
}

void Checker::check_weight_of(const ir::Node& n) {
  const ir::Node* dq = dq_of(n.input(1));
  if (!dq || !dq->input(0)) return;  // a float weight: the node runs float
  const ir::Value* src = dq->input(0);
  const Tensor* q = ir::constant_data(src);
  if (!q) {
    if (is_quantize(src->producer) && ir::constant_data(src->producer->input(0)))
      r_.notes.push_back(n.describe() + ": weight '" + src->producer->input(0)->name() +
                         "' is quantized in the graph (QuantizeLinear of a float constant); its codes are not checked");
    return;  // else an activation B of MatMul (quantize.matmul_activation_b)
  }
  const StatedParams p = dequantize_params(*dq);
  if (!p.known) return not_checked(n, src->name());
  check_weight(n, n.op_type, src->name(), *q, p);
}

void Checker::check_weight(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q,
                           const StatedParams& p) {
  ++r_.checked["weights"];
  // Depthwise as qconvert tells it (passes/qdq.cpp): one input channel per
  // group, as many groups as output channels.
  const bool depthwise = op == "Conv" && q.rank() >= 3 && q.dim(1) == 1 && n.attr_int("group", 1) == q.dim(0);
  const bool own_type = depthwise && t_.depthwise_weights != DType::Undefined;
  const bool first = t_.first_layer_weight_max > 0 && reads_graph_input(n);
  check_weight_codes(n, tensor, q, p, own_type ? t_.depthwise_weights : t_.weights,
                     own_type ? "quantize.weights.depthwise_type" : "quantize.weights.type",
                     first ? t_.first_layer_weight_max : t_.weight_max,
                     first ? "quantize.weights.first_layer_range" : "quantize.weights.range");
  check_granularity(n, op, tensor, q, p);
  if (t_.weight_pair_bound > 0 && q.dtype() == DType::Int8) check_pair_bound(n, op, tensor, q, p);
}

// Type, symmetry (the type's symmetric zero point) and every code within
// [-m, m] of its zero point.
void Checker::check_weight_codes(const ir::Node& n, const std::string& tensor, const Tensor& q, const StatedParams& p,
                                 DType want, const std::string& type_rule, int32_t m, const std::string& range_rule) {
  if (q.dtype() != want) add(n, tensor, type_rule, type_name(q.dtype()), type_name(want));
  if (!int_range(q.dtype())) return;
  const int64_t zero = symmetric_zero(q.dtype());
  for (size_t c = 0; c < p.zero_point.size(); ++c) {
    if (p.zero_point[c] == zero) continue;
    add(n, tensor, range_rule, "zero point " + std::to_string(p.zero_point[c]) + (p.per_tensor() ? "" : " (channel " + std::to_string(c) + ")"),
        "zero point " + std::to_string(zero) + " (symmetric weights)");
    break;
  }
  // Each code's own zero point when the per-axis shape agrees, else the
  // symmetric one.
  const bool by_axis = !p.per_tensor() && p.axis >= 0 && p.axis < q.rank() && q.dim(p.axis) == static_cast<int64_t>(p.scale.size());
  int64_t inner = 1;
  if (by_axis)
    for (int64_t d = p.axis + 1; d < q.rank(); ++d) inner *= q.dim(d);
  int64_t outside = 0, farthest = 0;
  for (int64_t i = 0; i < q.size(); ++i) {
    const int64_t z = p.per_tensor() ? p.zero_point[0] : by_axis ? p.zero_point[static_cast<size_t>((i / inner) % q.dim(p.axis))] : zero;
    const int64_t d = std::abs(q.as_int64(i) - z);
    if (d > m) ++outside, farthest = std::max(farthest, d);
  }
  if (outside)
    add(n, tensor, range_rule,
        std::to_string(outside) + " of " + std::to_string(q.size()) + " values up to " + std::to_string(farthest) + " from the zero point",
        "[-" + std::to_string(m) + ", " + std::to_string(m) + "] around the zero point");
  if (t_.schema == calib::Schema::Power2Scale)
    for (double s : p.scale)
      if (!power_of_two(s)) return add(n, tensor, "quantize.activations.schema", "weight scale " + number(s), "a power of two (power2-scale)");
}

void Checker::check_granularity(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q,
                                const StatedParams& p) {
  // The rule is what the backend can run: one that runs per-channel weights
  // runs per-tensor ones (one scale, repeated; TFLite allows per-tensor
  // wherever per-axis is), so per-tensor weights never break a per-channel
  // rule; per-channel weights do break a per-tensor one.
  if (p.per_tensor()) return;
  auto by_op = t_.per_channel_by_op.find(op);
  const bool per_channel = by_op != t_.per_channel_by_op.end() ? by_op->second : t_.per_channel;
  const std::string rule = by_op != t_.per_channel_by_op.end() ? "quantize.weights.granularity_by_op." + op : "quantize.weights.granularity";
  const std::string found = "per-axis along axis " + std::to_string(p.axis) + " (" + std::to_string(p.scale.size()) + " scales)";
  if (!per_channel) return add(n, tensor, rule, found, "per-tensor");
  const int64_t axis = channel_axis(op, n, q);
  const int64_t channels = axis >= 0 && axis < q.rank() ? q.dim(axis) : -1;
  if (p.axis != axis || static_cast<int64_t>(p.scale.size()) != channels)
    add(n, tensor, rule, found, "per-channel along axis " + std::to_string(axis) + " (" + std::to_string(channels) + " output channels)");
}

// |w[2j]| + |w[2j+1]| in ONNX Runtime's K order (passes/k_order.h), the codes
// taken from their zero point.
void Checker::check_pair_bound(const ir::Node& n, const std::string& op, const std::string& tensor, const Tensor& q,
                               const StatedParams& p) {
  ir::Node as = n;  // a QOperator node's pairs are those of its float op
  as.op_type = op;
  passes::KOrder o;
  if (!passes::k_order(as, q, o)) return;
  int64_t pairs = 0, over = 0, largest = 0;
  for (int64_t col = 0; col < o.columns; ++col) {
    const auto c = static_cast<size_t>(o.channel(col));
    const int64_t z = c < p.zero_point.size() ? p.zero_point[c] : p.zero_point[0];
    for (int64_t j = 0; j + 1 < o.k; j += 2, ++pairs) {
      const int64_t sum = std::abs(q.as_int64(o.index(col, j)) - z) + std::abs(q.as_int64(o.index(col, j + 1)) - z);
      if (sum > t_.weight_pair_bound) ++over, largest = std::max(largest, sum);
    }
  }
  if (over)
    add(n, tensor, "quantize.weights.pair_bound",
        std::to_string(over) + " of " + std::to_string(pairs) + " pairs over the bound (largest |w0| + |w1| = " + std::to_string(largest) + ")",
        "|w[2j]| + |w[2j+1]| <= " + std::to_string(t_.weight_pair_bound) + " in ONNX Runtime's K order");
}

// Bias: int32 at scale s_in * s_w[c] with zero point 0 (DESIGN Numerics).
void Checker::check_bias(const ir::Node& n) {
  const ir::Value* b = n.input(2);
  if (!b) return;
  const ir::Node* x_dq = activation_dq(n.input(0));
  const ir::Node* w_dq = weight_dq(n.input(1));
  const ir::Node* b_dq = dq_of(b);
  // ONNX's DequantizeLinear has no int64 input (opset 21, T1): an int64
  // target's bias is int32 where every value fits, float otherwise.
  const bool wide = t_.bias == DType::Int64;
  const std::string want = wide ? "int32 (or float: an int64 bias has no DequantizeLinear)" : "int32";
  if (t_.bias == DType::Float32) {  // TensorRT: the bias is added in float
    if (b_dq) {
      ++r_.checked["biases"];
      add(n, b_dq->input(0) ? b_dq->input(0)->name() : b->name(), "quantize.bias", "a quantized bias", "float");
    }
    return;
  }
  if (!b_dq) {
    const Tensor* f = ir::constant_data(b);
    if (!f || !is_float(f->dtype()) || !x_dq || !w_dq) return;
    ++r_.checked["biases"];
    if (!wide) add(n, b->name(), "quantize.bias", type_name(f->dtype()) + " (not quantized)", "int32 at scale s_in * s_w");
    return;
  }
  ++r_.checked["biases"];
  const std::string tensor = b_dq->input(0) ? b_dq->input(0)->name() : b->name();
  const StatedParams bp = dequantize_params(*b_dq);
  if (!bp.known) return not_checked(n, tensor);
  if (bp.type != DType::Int32) return add(n, tensor, "quantize.bias", type_name(bp.type), want);
  for (int64_t z : bp.zero_point)
    if (z != 0) return add(n, tensor, "quantize.bias", "zero point " + std::to_string(z), "zero point 0");
  if (!x_dq || !w_dq) return;
  const StatedParams xp = dequantize_params(*x_dq), wp = dequantize_params(*w_dq);
  if (!xp.known || !wp.known || !xp.per_tensor()) return;
  const size_t channels = std::max(bp.scale.size(), wp.scale.size());
  size_t wrong = 0, first = 0;
  double first_found = 0, first_want = 0;
  for (size_t c = 0; c < channels; ++c) {
    const double found = bp.per_tensor() ? bp.scale[0] : c < bp.scale.size() ? bp.scale[c] : 0;
    const double s_w = wp.per_tensor() ? wp.scale[0] : c < wp.scale.size() ? wp.scale[c] : 0;
    // qconvert and ONNX Runtime's quantizer multiply in float32.
    const double expected = static_cast<float>(xp.scale[0]) * static_cast<float>(s_w);
    if (close_scale(found, expected)) continue;
    if (wrong++ == 0) first = c, first_found = found, first_want = expected;
  }
  if (!wrong) return;
  std::string where = channels > 1 ? " (channel " + std::to_string(first) + "; " + std::to_string(wrong) + " of " +
                                         std::to_string(channels) + " channels differ)"
                                   : "";
  add(n, tensor, "quantize.bias", "scale " + number(first_found) + where, "s_in * s_w = " + number(first_want));
}

// quantize.weights.inputs_by_op: a constant input quantized as a per-tensor
// weight, when the node runs quantized (its input 0 is dequantized).
void Checker::check_weight_input(const ir::Node& n, int index) {
  const ir::Value* v = n.input(static_cast<size_t>(index));
  if (!v || !activation_dq(n.input(0))) return;
  const std::string rule = "quantize.weights.inputs_by_op." + n.op_type;
  const ir::Node* dq = weight_dq(v);
  if (!dq) {
    const Tensor* c = ir::constant_data(v);
    if (!c || !is_float(c->dtype())) return;
    ++r_.checked["weights"];
    return add(n, v->name(), rule, "float constant (not quantized)", type_name(t_.weights) + " weight, symmetric, per tensor");
  }
  const ir::Value* src = dq->input(0);
  const StatedParams p = dequantize_params(*dq);
  if (!p.known) return not_checked(n, src->name());
  ++r_.checked["weights"];
  check_weight_codes(n, src->name(), *ir::constant_data(src), p, t_.weights, rule, t_.weight_max, "quantize.weights.range");
  if (!p.per_tensor()) add(n, src->name(), rule, describe_params(p), "per tensor");
}

void Checker::check_shared(const ir::Node& n) {
  const ir::Node* in = activation_dq(n.input(0));
  if (!in || n.outputs.empty()) return;
  const StatedParams ip = dequantize_params(*in);
  for (const ir::Node* q : quantizers(n.outputs[0])) {
    const StatedParams op = quantize_params(*q);
    if (ip.known && op.known && !same_params(ip, op))
      add(n, n.outputs[0]->name(), "quantize.shares_input_params", describe_params(op), "the input's " + describe_params(ip));
  }
}

void Checker::check_same(const ir::Node& n) {
  std::vector<std::pair<std::string, StatedParams>> sets;
  for (const ir::Value* v : n.inputs)
    if (const ir::Node* dq = activation_dq(v)) sets.emplace_back(float_name(*dq), dequantize_params(*dq));
  if (!n.outputs.empty())
    for (const ir::Node* q : quantizers(n.outputs[0])) sets.emplace_back(n.outputs[0]->name(), quantize_params(*q));
  bool differ = false;
  for (const auto& [name, p] : sets) {
    if (!p.known) return not_checked(n, name);
    differ |= !same_params(p, sets[0].second);
  }
  if (!differ) return;
  std::string found;
  for (const auto& [name, p] : sets) found += (found.empty() ? "" : "; ") + name + ": " + describe_params(p);
  add(n, n.outputs.empty() || !n.outputs[0] ? "" : n.outputs[0]->name(), "quantize.same_params", found,
      "one set of parameters for every input and the output");
}

void Checker::check_matmul_b(const ir::Node& n) {
  const ir::Node* b = activation_dq(n.input(1));
  if (!b || !activation_dq(n.input(0))) return;
  const std::string tensor = float_name(*b);
  const StatedParams p = dequantize_params(*b);
  if (!p.known) return not_checked(n, tensor);
  ++r_.checked["activations"];
  if (p.type != t_.matmul_b_type)
    return add(n, tensor, "quantize.matmul_activation_b", type_name(p.type), type_name(t_.matmul_b_type));
  check_schema(n, tensor, p, t_.matmul_b_schema, "quantize.matmul_activation_b");
}

// placement "inputs": Q/DQ only on what quantized ops read (TensorRT fuses
// an op's output quantization itself).
void Checker::check_placement(const ir::Node& n) {
  for (const ir::Value* out : n.outputs) {
    const ir::Value* v = quantized_output(out);
    for (const ir::Node* q : quantizers(v)) {
      bool read_quantized = false;
      for (const ir::Node* dq : readers(q->outputs.empty() ? nullptr : q->outputs[0])) {
        if (!is_dequantize(dq) || dq->outputs.empty() || !dq->outputs[0]) continue;
        for (const ir::Node* reader : readers(dq->outputs[0]))
          read_quantized |= t_.ops.empty() || std::find(t_.ops.begin(), t_.ops.end(), reader->op_type) != t_.ops.end();
      }
      if (!read_quantized)
        add(n, v->name(), "quantize.placement", "output quantized, and no op of quantize.ops reads it",
            "Q/DQ only on the inputs of quantized ops (placement inputs)");
    }
  }
}

CheckResult Checker::run() {
  const auto& nodes = g_.nodes();
  r_.checked = {{"nodes", 0}, {"activations", 0}, {"weights", 0}, {"biases", 0}};
  if (t_.matmul_b_type != DType::Undefined) {
    for (const auto& n : nodes) {
      if (n->op_type != "MatMul" || !n->domain.empty() || !activation_dq(n->input(0))) continue;
      if (const ir::Node* b = activation_dq(n->input(1))) {
        matmul_b_.insert(b);
        if (is_quantize(b->input(0)->producer)) matmul_b_.insert(b->input(0)->producer);
      }
    }
  }
  int64_t dynamic = 0;
  for (const auto& np : nodes) {
    const ir::Node& n = *np;
    ++r_.checked["nodes"];
    dynamic += kDynamicOps.count(n.op_type);
    const ir::Value* x = n.input(0);
    const bool on_activation = x && !ir::constant_data(x);
    if (is_quantize(&n) && on_activation && !matmul_b_.count(&n)) {
      const std::string producer_op = x->producer && x->producer->domain.empty() ? x->producer->op_type : "";
      check_activation(n, x->name(), quantize_params(n), producer_op);
    } else if (is_dequantize(&n) && on_activation && !x->producer && !matmul_b_.count(&n)) {
      check_activation(n, x->name(), dequantize_params(n), "");  // an integer graph input
    }
    if (is_qoperator(n)) check_qoperator(n, qoperator_layout(n));
    check_quantized_group(n);
    if (!n.domain.empty()) continue;
    if (kWeightOps.count(n.op_type)) check_weight_of(n);
    if (n.op_type == "Conv" || n.op_type == "ConvTranspose" || n.op_type == "Gemm") check_bias(n);
    if (auto w = t_.weight_inputs.find(n.op_type); w != t_.weight_inputs.end()) check_weight_input(n, w->second);
    auto listed = [&](const std::vector<std::string>& ops) { return std::find(ops.begin(), ops.end(), n.op_type) != ops.end(); };
    if (listed(t_.shares_input_params) && !t_.fixed_output_params.count(n.op_type)) check_shared(n);
    if (listed(t_.same_params)) check_same(n);
    if (n.op_type == "MatMul" && t_.matmul_b_type != DType::Undefined) check_matmul_b(n);
    if (t_.placement == "inputs" && (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul")) check_placement(n);
  }
  if (dynamic)
    r_.notes.push_back("nodes of dynamic or weight-only quantization (DynamicQuantizeLinear, MatMulInteger, MatMulNBits, "
                       "...) are not checked, a target's rules being about static quantization: " + std::to_string(dynamic) +
                       " in this model");
  if (r_.checked["activations"] == 0 && r_.checked["weights"] == 0 && dynamic == 0)
    r_.notes.push_back("no quantized tensor found: the model looks float");
  return r_;
}

}  // namespace

CheckResult check_model(const ir::Graph& graph, const TargetSpec& target) {
  Checker checker(graph, target);
  return checker.run();
}

std::string describe(const Violation& v) {
  return v.op_type + (v.node.empty() ? "" : " '" + v.node + "'") + ", tensor '" + v.tensor + "': " + v.rule + ": found " + v.found + ", expected " + v.expected;
}

std::string check_json(const CheckResult& result, const std::string& target_name, const std::string& model) {
  nlohmann::json j;
  j["target"] = target_name;
  j["model"] = model;
  j["violations"] = nlohmann::json::array();
  for (const auto& v : result.violations)
    j["violations"].push_back({{"node", v.node}, {"op_type", v.op_type}, {"tensor", v.tensor}, {"rule", v.rule},
                               {"found", v.found}, {"expected", v.expected}});
  j["notes"] = result.notes;
  j["checked"] = result.checked;
  return j.dump(2) + "\n";
}

}  // namespace quant::target
