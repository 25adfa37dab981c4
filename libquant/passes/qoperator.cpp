#include "libquant/passes/qoperator.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace quant::passes {
namespace {

bool is_node(const ir::Node* n, const char* op) { return n && n->op_type == op; }

// Two constant values holding the same tensor (type, shape and bytes).
bool same_constant(const ir::Value* a, const ir::Value* b) {
  const Tensor* x = ir::constant_data(a);
  const Tensor* y = ir::constant_data(b);
  return x && y && x->dtype() == y->dtype() && x->shape() == y->shape() &&
         std::memcmp(x->raw(), y->raw(), x->byte_size()) == 0;
}

// The DequantizeLinear producing `v` (ai.onnx or com.microsoft), or nullptr.
ir::Node* dq_of(const ir::Value* v) {
  ir::Node* p = v ? v->producer : nullptr;
  return is_node(p, "DequantizeLinear") && p->inputs.size() >= 3 && p->inputs[2] ? p : nullptr;
}

// QLinear* ops and 8-bit MaxPool take uint8/int8 only: 16-bit tensors stay QDQ.
bool is_8bit(const ir::Value* zero_point) {
  const Tensor* z = ir::constant_data(zero_point);
  return z && (z->dtype() == DType::UInt8 || z->dtype() == DType::Int8);
}

// The only consumer of `v` when it is an 8-bit QuantizeLinear, or nullptr.
ir::Node* sole_q_consumer(const ir::Graph& g, const ir::Value* v) {
  if (!v || g.is_graph_output(v)) return nullptr;
  auto users = g.consumers(v);
  return users.size() == 1 && is_node(users[0], "QuantizeLinear") && users[0]->inputs.size() >= 3 &&
                 is_8bit(users[0]->inputs[2])
             ? users[0]
             : nullptr;
}

// Real value of integer q under a Q node's (per-tensor) parameters.
std::optional<std::pair<double, double>> q_real_range(const ir::Node& q) {
  const Tensor* s = ir::constant_data(q.input(1));
  const Tensor* z = ir::constant_data(q.input(2));
  if (!s || !z || s->size() != 1 || z->size() != 1) return std::nullopt;
  auto r = int_range(z->dtype());
  if (!r) return std::nullopt;
  const double scale = s->as_double(0), zp = z->as_double(0);
  return std::make_pair(scale * (static_cast<double>(r->min) - zp), scale * (static_cast<double>(r->max) - zp));
}

// Whether Relu/Clip `act` changes nothing once its output is saturated by `q`.
bool activation_implied(const ir::Node& act, const ir::Node& q) {
  auto range = q_real_range(q);
  if (!range) return false;
  double lo = 0, hi = INFINITY;
  if (act.op_type == "Clip") {
    lo = -INFINITY;
    const Tensor* tlo = ir::constant_data(act.input(1));
    const Tensor* thi = ir::constant_data(act.input(2));
    if (act.input(1) && !tlo) return false;
    if (act.input(2) && !thi) return false;
    if (tlo) lo = tlo->as_double(0);
    if (thi) hi = thi->as_double(0);
    if (const ir::Attribute* a = act.find_attribute("min")) lo = a->f;
    if (const ir::Attribute* a = act.find_attribute("max")) hi = a->f;
  }
  return range->first >= lo && range->second <= hi;
}

// Where the op's float output is quantized: its Q node, skipping a Relu/Clip
// that saturation implies. `dropped` gets that activation node.
ir::Node* output_q(const ir::Graph& g, const ir::Node& n, ir::Node*& dropped) {
  dropped = nullptr;
  ir::Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (ir::Node* q = sole_q_consumer(g, y)) return q;
  if (!y || g.is_graph_output(y)) return nullptr;
  auto users = g.consumers(y);
  if (users.size() != 1 || (users[0]->op_type != "Relu" && users[0]->op_type != "Clip")) return nullptr;
  ir::Node* q = sole_q_consumer(g, users[0]->outputs[0]);
  if (!q || !activation_implied(*users[0], *q)) return nullptr;
  dropped = users[0];
  return q;
}

class Emitter {
 public:
  explicit Emitter(ir::Graph& g) : g_(g) {}
  Expected<std::vector<std::string>> run();

 private:
  // Replaces `n` (and `dropped`, and `q`) by `op_type` reading `inputs` and
  // writing q's integer output.
  void replace(ir::Node* n, ir::Node* dropped, ir::Node* q, std::string op_type, std::string domain,
               std::vector<ir::Value*> inputs, std::map<std::string, ir::Attribute> attributes);
  // (q, scale, zero point) of the DQ feeding input i of n; nullopt when not a DQ.
  // Activations are quantized per tensor; anything else does not match.
  std::optional<std::vector<ir::Value*>> triple(const ir::Node& n, size_t i) {
    ir::Node* d = dq_of(n.input(i));
    const Tensor* s = d ? ir::constant_data(d->input(1)) : nullptr;
    if (!s || s->size() != 1 || !is_8bit(d->input(2))) return std::nullopt;
    return std::vector<ir::Value*>{d->inputs[0], d->inputs[1], d->inputs[2]};
  }

  ir::Graph& g_;
  std::vector<std::string> notes_;
  // Nodes replace() deleted: the precomputed order still points at them.
  std::set<const ir::Node*> removed_;
};

void Emitter::replace(ir::Node* n, ir::Node* dropped, ir::Node* q, std::string op_type, std::string domain,
                      std::vector<ir::Value*> inputs, std::map<std::string, ir::Attribute> attributes) {
  ir::Value* out = q->outputs[0];
  const std::string name = n->name;
  notes_.push_back(n->describe() + " -> " + (domain.empty() ? "" : domain + ".") + op_type +
                   (dropped ? " (" + dropped->op_type + " implied by saturation)" : ""));
  ir::Node* lowered = g_.insert_node(n, std::move(op_type), std::move(inputs), {out}, name, std::move(domain));
  lowered->attributes = std::move(attributes);
  removed_.insert({q, dropped, n});
  g_.remove_node(q);
  if (dropped) g_.remove_node(dropped);
  g_.remove_node(n);
  out->producer = lowered;
}

Expected<std::vector<std::string>> Emitter::run() {
  static const std::set<std::string> kMoveOnly = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"};
  bool uses_microsoft = false;
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());
  for (ir::Node* n : order) {
    if (removed_.count(n) || !n->domain.empty()) continue;
    ir::Node* dropped = nullptr;
    ir::Node* q = output_q(g_, *n, dropped);
    if (!q) continue;
    const std::string& op = n->op_type;
    const std::vector<ir::Value*> yq{q->inputs[1], q->inputs[2]};
    if (op == "Conv" || op == "MatMul") {
      auto x = triple(*n, 0);
      ir::Node* wd = dq_of(n->input(1));
      if (!x || !wd || !ir::constant_data(wd->input(0))) continue;
      std::vector<ir::Value*> ins = *x;
      ins.insert(ins.end(), {wd->inputs[0], wd->inputs[1], wd->inputs[2], yq[0], yq[1]});
      if (op == "Conv" && n->input(2)) {
        ir::Node* bd = dq_of(n->input(2));
        if (!bd || !ir::constant_data(bd->input(0)) || bd->inputs[0]->constant->dtype() != DType::Int32) continue;
        ins.push_back(bd->inputs[0]);
      }
      if (op == "MatMul" && ir::constant_data(wd->input(1))->rank() > 1) continue;
      replace(n, dropped, q, op == "Conv" ? "QLinearConv" : "QLinearMatMul", "", ins,
              op == "Conv" ? n->attributes : std::map<std::string, ir::Attribute>{});
    } else if (op == "Add" || op == "Mul") {
      auto a = triple(*n, 0), b = triple(*n, 1);
      if (!a || !b) continue;
      std::vector<ir::Value*> ins = *a;
      ins.insert(ins.end(), b->begin(), b->end());
      ins.insert(ins.end(), yq.begin(), yq.end());
      replace(n, dropped, q, op == "Add" ? "QLinearAdd" : "QLinearMul", "com.microsoft", ins, {});
      uses_microsoft = true;
    } else if (op == "GlobalAveragePool" || op == "AveragePool" || op == "Sigmoid" || op == "LeakyRelu") {
      auto x = triple(*n, 0);
      if (!x || dropped) continue;
      std::vector<ir::Value*> ins = *x;
      ins.insert(ins.end(), yq.begin(), yq.end());
      auto attrs = n->attributes;
      if (op == "GlobalAveragePool" || op == "AveragePool") attrs["channels_last"] = ir::Attribute::of_int(0);
      replace(n, dropped, q, "QLinear" + op, "com.microsoft", ins, attrs);
      uses_microsoft = true;
    } else if (op == "Concat") {
      std::vector<ir::Value*> ins = yq;
      bool ok = true;
      for (size_t i = 0; i < n->inputs.size() && ok; ++i) {
        auto t = triple(*n, i);
        ok = t.has_value();
        if (ok) ins.insert(ins.end(), t->begin(), t->end());
      }
      if (!ok || dropped) continue;
      replace(n, nullptr, q, "QLinearConcat", "com.microsoft", ins, n->attributes);
      uses_microsoft = true;
    } else if (kMoveOnly.count(op)) {
      // Same parameters in and out (qconvert shares them): run on the 8-bit data.
      ir::Node* d = dq_of(n->input(0));
      if (!d || dropped || !same_constant(d->inputs[1], q->inputs[1]) || !same_constant(d->inputs[2], q->inputs[2])) continue;
      std::vector<ir::Value*> ins = n->inputs;
      ins[0] = d->inputs[0];
      replace(n, nullptr, q, op, "", ins, n->attributes);
    }
  }
  // Drop the DequantizeLinear nodes nothing reads any more.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& n : g_.nodes()) {
      if ((n->op_type == "DequantizeLinear" || n->op_type == "QuantizeLinear") && n->outputs[0] &&
          g_.consumers(n->outputs[0]).empty() && !g_.is_graph_output(n->outputs[0])) {
        g_.remove_node(n.get());
        changed = true;
        break;
      }
    }
  }
  if (uses_microsoft) g_.opset_imports.try_emplace("com.microsoft", 1);
  g_.remove_unused_values();
  QT_RETURN_IF_ERROR(g_.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g_));
  return notes_;
}

}  // namespace

Expected<std::vector<std::string>> emit_qoperator(ir::Graph& graph) {
  Emitter e(graph);
  return e.run();
}

}  // namespace quant::passes
