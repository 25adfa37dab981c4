#include "libquant/interp/session.h"

#include <set>
#include <unordered_map>

namespace quant::interp {

namespace {

// Ops whose result may change from run to run: never folded (ONNX generator
// ops; a seed attribute makes them repeatable, but each run must still draw
// anew, as ONNX Runtime does).
bool is_nondeterministic(const ir::Node& n) {
  static const std::set<std::string> kOps{"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                          "Bernoulli", "Multinomial"};
  return n.domain.empty() && kOps.count(n.op_type) > 0;
}

}  // namespace

Expected<std::unique_ptr<Session>> Session::create(const ir::Graph& graph, const SessionOptions& options) {
  std::unique_ptr<Session> s(new Session(graph, options));
  std::unordered_map<const ir::Value*, int> slot_of;
  std::vector<char> ready;  // per slot: a graph input, a constant, or produced by an earlier node
  auto slot = [&](const ir::Value* v) {
    auto it = slot_of.find(v);
    if (it != slot_of.end()) return it->second;
    int id = static_cast<int>(s->slot_values_.size());
    slot_of[v] = id;
    s->slot_values_.push_back(v);
    s->constant_slots_.push_back(v->constant.get());
    ready.push_back(v->constant != nullptr);
    return id;
  };
  for (const ir::Value* v : graph.inputs) {
    s->input_slots_.push_back(slot(v));
    ready[static_cast<size_t>(s->input_slots_.back())] = 1;
  }
  QT_ASSIGN_OR_RETURN(auto order, graph.topological_order());
  std::vector<const Tensor*> fold_inputs;
  std::vector<Tensor> fold_outputs;
  for (const ir::Node* n : order) {
    KernelFactory factory = find_kernel_factory(n->domain, n->op_type);
    int64_t opset = graph.opset(n->domain);
    if (!factory) {
      return Status::bad_input(n->describe() + ": operator " + (n->domain.empty() ? "" : n->domain + ".") + n->op_type +
                               " (opset " + std::to_string(opset) + ") is not supported by the interpreter");
    }
    auto kernel = factory(KernelContext{*n, opset, &graph, options});
    if (!kernel) return kernel.status().with_context(n->describe());
    Step step{n, std::move(kernel).value(), {}, {}, {}};
    for (const ir::Value* v : n->inputs) step.inputs.push_back(v ? slot(v) : -1);
    // Outer-scope values a subgraph reads come after the node's inputs.
    for (const std::string& name : step.kernel->implicit_inputs()) {
      const ir::Value* v = graph.find_value(name);
      if (!v) return Status::bad_input(n->describe() + ": its subgraph reads '" + name + "', which the enclosing graph does not define");
      int sl = slot(v);
      if (!ready[static_cast<size_t>(sl)])
        return Status::bad_input(n->describe() + ": its subgraph reads '" + name + "' before a node produces it");
      step.inputs.push_back(sl);
    }
    for (const ir::Value* v : n->outputs) step.outputs.push_back(v ? slot(v) : -1);
    for (int o : step.outputs)
      if (o >= 0) ready[static_cast<size_t>(o)] = 1;

    // Constant folding (see session.h): run now, keep the outputs as constants.
    bool foldable = !is_nondeterministic(*n);
    for (int in : step.inputs) foldable = foldable && (in < 0 || s->constant_slots_[static_cast<size_t>(in)] != nullptr);
    if (!foldable) {
      s->steps_.push_back(std::move(step));
      continue;
    }
    fold_inputs.clear();
    for (int in : step.inputs) fold_inputs.push_back(in >= 0 ? s->constant_slots_[static_cast<size_t>(in)] : nullptr);
    fold_outputs.assign(step.outputs.size(), Tensor());
    Status st = step.kernel->run(fold_inputs, fold_outputs);
    if (!st.is_ok()) return st.with_context(n->describe());
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      int o = step.outputs[k];
      if (o < 0) continue;
      s->folded_.push_back(std::move(fold_outputs[k]));
      s->constant_slots_[static_cast<size_t>(o)] = &s->folded_.back();
    }
  }
  for (const ir::Value* v : graph.outputs) s->output_slots_.push_back(slot(v));

  // Liveness: a slot is released after its last reader, unless it is a graph
  // output or constant data (owned by the graph).
  std::vector<int> last_use(s->slot_values_.size(), -1);
  for (size_t i = 0; i < s->steps_.size(); ++i)
    for (int in : s->steps_[i].inputs)
      if (in >= 0) last_use[static_cast<size_t>(in)] = static_cast<int>(i);
  for (int out : s->output_slots_) last_use[static_cast<size_t>(out)] = -2;
  for (size_t v = 0; v < last_use.size(); ++v)
    if (last_use[v] >= 0 && !s->constant_slots_[v]) s->steps_[static_cast<size_t>(last_use[v])].release_after.push_back(static_cast<int>(v));
  return s;
}

namespace {

Status check_input(const ir::Value& v, const Tensor& t) {
  if (v.dtype != DType::Undefined && t.dtype() != v.dtype) {
    return Status::bad_input("input '" + v.name() + "' has type " + std::string(dtype_name(t.dtype())) +
                             ", the model expects " + std::string(dtype_name(v.dtype)));
  }
  if (!v.has_shape) return Status::ok();
  bool ok = t.rank() == static_cast<int64_t>(v.shape.size());
  for (size_t i = 0; ok && i < v.shape.size(); ++i) ok = v.shape[i] < 0 || v.shape[i] == t.shape()[i];
  if (!ok) {
    return Status::bad_input("input '" + v.name() + "' has shape " + dims_to_string(t.shape()) +
                             ", the model expects " + dims_to_string(v.shape) + " (-1: any)");
  }
  return Status::ok();
}

}  // namespace

Expected<std::vector<Tensor>> Session::run(const std::vector<Tensor>& inputs, const Observer& observer) const {
  std::vector<const Tensor*> borrowed;
  borrowed.reserve(inputs.size());
  for (const Tensor& t : inputs) borrowed.push_back(&t);
  return run(std::span<const Tensor* const>(borrowed), observer);
}

Expected<std::vector<Tensor>> Session::run(std::span<const Tensor* const> inputs, const Observer& observer) const {
  if (inputs.size() != input_slots_.size()) {
    return Status::bad_input("model takes " + std::to_string(input_slots_.size()) + " inputs, got " +
                             std::to_string(inputs.size()));
  }
  std::vector<Tensor> owned(slot_values_.size());
  std::vector<const Tensor*> ptr(constant_slots_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *slot_values_[static_cast<size_t>(input_slots_[i])];
    if (!inputs[i]) return Status::internal("input '" + v.name() + "' is null");
    QT_RETURN_IF_ERROR(check_input(v, *inputs[i]));
    ptr[static_cast<size_t>(input_slots_[i])] = inputs[i];
    if (observer) observer(v, *inputs[i]);
  }
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor> outs;
  for (const Step& step : steps_) {
    in_ptrs.clear();
    for (int in : step.inputs) in_ptrs.push_back(in >= 0 ? ptr[static_cast<size_t>(in)] : nullptr);
    outs.assign(step.outputs.size(), Tensor());
    Status st = step.kernel->run(in_ptrs, outs);
    if (!st.is_ok()) return st.with_context(step.node->describe());
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      int o = step.outputs[k];
      if (o < 0) continue;
      owned[static_cast<size_t>(o)] = std::move(outs[k]);
      ptr[static_cast<size_t>(o)] = &owned[static_cast<size_t>(o)];
      if (observer) observer(*slot_values_[static_cast<size_t>(o)], owned[static_cast<size_t>(o)]);
    }
    for (int r : step.release_after) {
      owned[static_cast<size_t>(r)] = Tensor();
      ptr[static_cast<size_t>(r)] = nullptr;
    }
  }
  std::vector<Tensor> result;
  for (int o : output_slots_) {
    const Tensor* t = ptr[static_cast<size_t>(o)];
    if (!t) return Status::internal("graph output '" + slot_values_[static_cast<size_t>(o)]->name() + "' was not computed");
    result.push_back(*t);
  }
  return result;
}

}  // namespace quant::interp
