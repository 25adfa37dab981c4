#include "libquant/interp/session.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include "libquant/interp/body_observer.h"
#include "libquant/interp/buffer_plan.h"
#include "libquant/interp/fusion.h"
#include "libquant/kernels/shape_util.h"

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

// The data of a value known before any run: an initializer, or the output
// of a Constant node with a tensor `value` (how exporters write Clip bounds).
const Tensor* prepare_time_constant(const ir::Value& v) {
  if (v.constant) return v.constant.get();
  const ir::Node* p = v.producer;
  if (!p || !p->domain.empty() || p->op_type != "Constant" || p->outputs.size() != 1) return nullptr;
  const ir::Attribute* a = p->find_attribute("value");
  return a && a->kind == ir::Attribute::Kind::Tensor ? a->t.get() : nullptr;
}

// Whether a value is float32 although the model may not say so (exporters
// often write no value_info): Conv runs on float32 only (make_conv), and
// these ops keep their first input's type.
bool known_float32(const ir::Value* v) {
  for (int depth = 0; v && depth < 10000; ++depth) {
    if (v->dtype != DType::Undefined) return v->dtype == DType::Float32;
    const ir::Node* p = v->producer;
    if (!p || !p->domain.empty()) return false;
    if (p->op_type == "Conv") return true;
    static const std::set<std::string> kSameType{"Relu", "Clip", "Add", "MaxPool", "AveragePool", "GlobalAveragePool",
                                                 "Flatten", "Reshape", "Identity"};
    if (!kSameType.count(p->op_type) || p->inputs.empty() || p->outputs[0] != v) return false;
    v = p->inputs[0];
  }
  return false;
}

// The clamp a Relu or Clip node applies, when it can move into the epilogue
// of the node before it: float32 bounds known at prepare time (Clip opset 11+:
// constant scalar inputs, absent ones the float range as in make_clip; before
// opset 11: attributes). The epilogue clamps as min(max(v, lo), hi), which is
// the reference kernels' Relu (v < 0 ? 0 : v) and Clip for every value.
std::optional<kernels::ConvActivation> activation_of(const ir::Graph& graph, const ir::Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || !known_float32(n.inputs[0])) return std::nullopt;
  kernels::ConvActivation act;
  act.clamp = true;
  act.lo = 0.0f;
  act.hi = std::numeric_limits<float>::infinity();
  if (n.op_type == "Relu") return act;
  if (n.op_type != "Clip") return std::nullopt;
  act.lo = std::numeric_limits<float>::lowest();
  act.hi = std::numeric_limits<float>::max();
  if (graph.opset("") < 11) {
    if (n.find_attribute("min")) act.lo = n.attr_float("min", 0);
    if (n.find_attribute("max")) act.hi = n.attr_float("max", 0);
    return act;
  }
  for (size_t k = 1; k <= 2; ++k) {
    const ir::Value* b = n.input(k);
    if (!b) continue;
    const Tensor* t = prepare_time_constant(*b);
    if (!t || t->dtype() != DType::Float32 || t->size() != 1) return std::nullopt;
    (k == 1 ? act.lo : act.hi) = t->data<float>()[0];
  }
  return act;
}

// Fusion (PlanOptions::fuse). A node's output may be absorbed by its one
// reader when that reader reads it once and the value is no graph output:
//  - Conv or Add -> Relu/Clip: the clamp runs in the producer's epilogue;
//  - Conv -> Add (-> Relu/Clip): the Add's other operand (the residual of a
//    ResNet or MobileNet block) is added in the Conv's epilogue, when it is
//    computed before the Conv (a graph input, a constant, or an earlier
//    node's output), so the fused step can run where the Conv ran.
// The absorbed nodes' intermediate values are never computed.
struct FusedTail {
  const ir::Node* last;                     // the node whose output the fused step writes
  std::optional<kernels::ConvActivation> act;
  const ir::Value* residual = nullptr;      // Conv -> Add only
};
struct Fusion {
  std::unordered_map<const ir::Node*, FusedTail> into;  // producer -> what it absorbs
  std::set<const ir::Node*> absorbed;                   // nodes that run inside a producer's kernel
};

Fusion plan_fusion(const ir::Graph& graph, const std::vector<ir::Node*>& order) {
  std::unordered_map<const ir::Value*, std::vector<const ir::Node*>> readers;
  std::unordered_map<const ir::Node*, size_t> position;
  for (const ir::Node* n : order) {
    position[n] = position.size();
    for (const ir::Value* v : n->inputs)
      if (v) readers[v].push_back(n);
    for (const ir::Value* v : n->implicit_inputs) readers[v].push_back(n);
  }
  // The single reader of n's only output, reading it once, or null.
  const auto sole_reader = [&](const ir::Node* n) -> const ir::Node* {
    if (n->outputs.size() != 1) return nullptr;
    const ir::Value* v = n->outputs[0];
    if (!v || graph.is_graph_output(v)) return nullptr;
    const auto it = readers.find(v);
    if (it == readers.end() || it->second.size() != 1) return nullptr;
    const ir::Node* r = it->second[0];
    // Read once: Clip(v, v, v) or Add(v, v) would still need v.
    if (std::count(r->inputs.begin(), r->inputs.end(), v) != 1 || r->outputs.size() != 1 || !r->outputs[0]) return nullptr;
    return r;
  };
  // An activation node reading n's output as its data input, and its clamp.
  const auto activation_after = [&](const ir::Node* n) -> std::optional<std::pair<const ir::Node*, kernels::ConvActivation>> {
    const ir::Node* a = sole_reader(n);
    if (!a || a->inputs[0] != n->outputs[0]) return std::nullopt;
    const auto act = activation_of(graph, *a);
    if (!act) return std::nullopt;
    return std::make_pair(a, *act);
  };
  Fusion f;
  for (const ir::Node* n : order) {
    if (!n->domain.empty() || (n->op_type != "Conv" && n->op_type != "Add") || f.absorbed.count(n)) continue;
    const ir::Node* add = n->op_type == "Conv" && n->inputs.size() <= 3 ? sole_reader(n) : nullptr;
    if (add && add->domain.empty() && add->op_type == "Add" && add->inputs.size() == 2) {
      const ir::Value* other = add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0];
      const bool ready = other && (other->constant || !other->producer || position.at(other->producer) < position.at(n));
      if (ready) {
        FusedTail tail{add, std::nullopt, other};
        f.absorbed.insert(add);
        if (const auto act = activation_after(add)) {
          tail.last = act->first;
          tail.act = act->second;
          f.absorbed.insert(act->first);
        }
        f.into[n] = tail;
        continue;
      }
    }
    if (const auto act = activation_after(n)) {
      f.into[n] = FusedTail{act->first, act->second, nullptr};
      f.absorbed.insert(act->first);
    }
  }
  return f;
}

// Bytes of `count` elements of `dtype` in a shared buffer of the memory
// plan, or -1 for a value that never shares one (strings, whose elements
// live outside the buffer, and values of no known type).
int64_t shared_bytes(DType dtype, int64_t count) {
  if (dtype == DType::Undefined || dtype == DType::String || count < 0) return -1;
  return count * static_cast<int64_t>(dtype_size(dtype));
}

// A value's bytes for the memory plan from its static type and shape; -1
// (a buffer of its own, learned from the first run) for dynamic shapes.
int64_t static_bytes(const ir::Value& v) {
  if (v.kind != Tensor::Kind::Tensor || !v.has_shape) return -1;
  int64_t count = 1;
  for (int64_t d : v.shape) {
    if (d < 0) return -1;
    count *= d;
  }
  return shared_bytes(v.dtype, count);
}

}  // namespace

Expected<std::unique_ptr<Session>> Session::create(const ir::Graph& graph, const SessionOptions& options,
                                                   const PlanOptions& plan) {
  std::unique_ptr<Session> s(new Session(graph, options, plan));
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
  const Fusion fusion = plan.fuse ? plan_fusion(graph, order) : Fusion{};
  std::vector<const Tensor*> fold_inputs;
  std::vector<Tensor> fold_outputs;
  for (const ir::Node* n : order) {
    if (fusion.absorbed.count(n)) continue;  // runs inside its producer's kernel
    KernelFactory factory = find_kernel_factory(n->domain, n->op_type);
    int64_t opset = graph.opset(n->domain);
    if (!factory) {
      return Status::bad_input(n->describe() + ": operator " + (n->domain.empty() ? "" : n->domain + ".") + n->op_type +
                               " (opset " + std::to_string(opset) + ") is not supported by the interpreter");
    }
    const KernelContext ctx{*n, opset, &graph, options};
    const auto fused = fusion.into.find(n);
    const kernels::ConvActivation act = fused == fusion.into.end() ? kernels::ConvActivation{}
                                                                    : fused->second.act.value_or(kernels::ConvActivation{});
    const bool residual = fused != fusion.into.end() && fused->second.residual;
    auto kernel = fused == fusion.into.end() ? factory(ctx)
                  : n->op_type == "Conv"     ? make_conv_fused(ctx, act, residual)
                                             : make_add_fused(ctx, act);
    if (!kernel) return kernel.status().with_context(n->describe());
    Step step{n, std::move(kernel).value(), {}, {}, {}, {}};
    for (const ir::Value* v : n->inputs) step.inputs.push_back(v ? slot(v) : -1);
    if (residual) {
      // make_conv_fused reads the residual as input 3, after an optional bias.
      step.inputs.resize(3, -1);
      step.inputs.push_back(slot(fused->second.residual));
    }
    // Outer-scope values a subgraph reads come after the node's inputs.
    for (const std::string& name : step.kernel->implicit_inputs()) {
      const ir::Value* v = graph.find_value(name);
      if (!v) return Status::bad_input(n->describe() + ": its subgraph reads '" + name + "', which the enclosing graph does not define");
      int sl = slot(v);
      if (!ready[static_cast<size_t>(sl)])
        return Status::bad_input(n->describe() + ": its subgraph reads '" + name + "' before a node produces it");
      step.inputs.push_back(sl);
    }
    if (fused != fusion.into.end())
      step.outputs.push_back(slot(fused->second.last->outputs[0]));  // the last absorbed node's output
    else
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

  // Liveness: a slot is released after its last reader (an output nothing
  // reads: right after the step producing it), unless it is a graph output or
  // constant data (owned by the graph).
  const size_t n_slots = s->slot_values_.size();
  std::vector<int> first_def(n_slots, -1), last_use(n_slots, -1);
  for (size_t i = 0; i < s->steps_.size(); ++i) {
    for (int in : s->steps_[i].inputs)
      if (in >= 0) last_use[static_cast<size_t>(in)] = static_cast<int>(i);
    for (int out : s->steps_[i].outputs)
      if (out >= 0 && first_def[static_cast<size_t>(out)] < 0) first_def[static_cast<size_t>(out)] = static_cast<int>(i);
  }
  for (size_t v = 0; v < n_slots; ++v)
    if (first_def[v] >= 0 && last_use[v] < first_def[v]) last_use[v] = first_def[v];
  for (int out : s->output_slots_) last_use[static_cast<size_t>(out)] = -2;
  for (size_t v = 0; v < n_slots; ++v)
    if (last_use[v] >= 0 && !s->constant_slots_[v]) s->steps_[static_cast<size_t>(last_use[v])].release_after.push_back(static_cast<int>(v));

  if (options.release_mapped_weights)
    for (Step& step : s->steps_)
      for (int in : step.inputs) {
        const Tensor* c = in >= 0 ? s->constant_slots_[static_cast<size_t>(in)] : nullptr;
        if (c && c->mapping() && c->byte_size() >= (size_t{1} << 20)) step.release_mapped.push_back(c->mapping());
      }

  // Memory plan: every value a step produces, released after its last use,
  // gets a buffer (buffer_plan.h); sizes from the model's static shapes.
  s->lifetimes_.assign(n_slots, {-1, -1});
  if (plan.reuse_buffers) {
    std::vector<int64_t> bytes_of_slot(n_slots, -1);
    for (size_t v = 0; v < n_slots; ++v) {
      if (first_def[v] < 0 || last_use[v] < 0 || s->constant_slots_[v]) continue;
      s->lifetimes_[v] = {first_def[v], last_use[v]};
      bytes_of_slot[v] = static_bytes(*s->slot_values_[v]);
    }
    s->memory_plan_ = s->make_plan(bytes_of_slot, nullptr, true);
  } else {
    auto none = std::make_shared<MemoryPlan>();
    none->buffer_of_slot.assign(n_slots, -1);
    none->in_place_input.assign(s->steps_.size(), -1);
    none->offset_of_slot.assign(n_slots, 0);
    none->slice_bytes.assign(n_slots, 0);
    s->memory_plan_ = std::move(none);
    s->replanned_ = true;
  }
  return s;
}

std::shared_ptr<const Session::MemoryPlan> Session::make_plan(const std::vector<int64_t>& bytes_of_slot,
                                                              const std::vector<Dims>* shapes, bool provisional) const {
  auto mp = std::make_shared<MemoryPlan>();
  mp->provisional = provisional;
  const size_t n_slots = lifetimes_.size();
  mp->buffer_of_slot.assign(n_slots, -1);
  mp->in_place_input.assign(steps_.size(), -1);
  const auto planned = [&](int v) { return v >= 0 && lifetimes_[static_cast<size_t>(v)].first >= 0; };
  // In place (PlanOptions::in_place): the output joins its input's group, and
  // a group of values written over one another is one use of one buffer,
  // from its first value's producer to its last value's last reader.
  std::vector<int> group(n_slots);
  std::vector<const ir::Value*> takes_over(n_slots, nullptr);
  for (size_t v = 0; v < n_slots; ++v) group[v] = static_cast<int>(v);
  for (size_t i = 0; plan_.in_place && i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.outputs.size() != 1 || !planned(step.outputs[0])) continue;
    const size_t y = static_cast<size_t>(step.outputs[0]);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int x = step.inputs[k];
      if (!planned(x) || !step.kernel->may_overwrite_input(k)) continue;
      const size_t xs = static_cast<size_t>(x);
      // Read last here, and only once (Add(x, x) would read it through the output).
      if (lifetimes_[xs].second != static_cast<int>(i) || std::count(step.inputs.begin(), step.inputs.end(), x) != 1) continue;
      if (bytes_of_slot[xs] < 0 || bytes_of_slot[xs] != bytes_of_slot[y]) continue;
      mp->in_place_input[i] = static_cast<int>(k);
      group[y] = group[xs];
      takes_over[y] = slot_values_[xs];
      break;
    }
  }
  mp->offset_of_slot.assign(n_slots, 0);
  mp->slice_bytes.assign(n_slots, 0);
  for (size_t i = 0; plan_.in_place && i < steps_.size(); ++i) {
    const auto slices = concat_slices(i, bytes_of_slot, shapes, group, mp->slice_bytes);
    if (slices.empty()) continue;
    // Each input's group (the input, and any value it was written over in
    // place) joins the output's at the input's slice.
    const int out_group = group[static_cast<size_t>(steps_[i].outputs[0])];
    for (const auto& [k, offset] : slices) {
      const size_t x = static_cast<size_t>(steps_[i].inputs[k]);
      const int in_group = group[x];
      for (size_t v = 0; v < n_slots; ++v) {
        if (group[v] != in_group) continue;
        group[v] = out_group;
        mp->offset_of_slot[v] = offset;
        mp->slice_bytes[v] = bytes_of_slot[x];
      }
    }
  }
  std::vector<BufferUse> uses;
  std::vector<int> use_of_group(n_slots, -1);
  for (size_t v = 0; v < n_slots; ++v) {
    if (lifetimes_[v].first < 0) continue;
    int& u = use_of_group[static_cast<size_t>(group[v])];
    const int64_t bytes = bytes_of_slot[v];
    if (u < 0) {
      u = static_cast<int>(uses.size());
      uses.push_back(BufferUse{lifetimes_[v].first, lifetimes_[v].second, bytes < 0 ? -1 : 0, 0});
    }
    BufferUse& use = uses[static_cast<size_t>(u)];
    use.first = std::min<int64_t>(use.first, lifetimes_[v].first);
    use.last = std::max<int64_t>(use.last, lifetimes_[v].second);
    use.bytes = std::max<int64_t>(use.bytes, mp->offset_of_slot[v] + std::max<int64_t>(bytes, 0));
  }
  const BufferPlan bp = plan_buffers(uses);
  for (size_t v = 0; v < n_slots; ++v) {
    if (lifetimes_[v].first < 0) continue;
    const int b = bp.buffer_of[static_cast<size_t>(use_of_group[static_cast<size_t>(group[v])])];
    mp->buffer_of_slot[v] = b;
    mp->planned.push_back({slot_values_[v], lifetimes_[v].first, lifetimes_[v].second, b, takes_over[v],
                           mp->offset_of_slot[v], bytes_of_slot[v]});
  }
  mp->buffer_count = bp.buffer_count;
  mp->buffer_bytes = bp.capacity;
  return mp;
}

// Concat without copies (PlanOptions::in_place): for step i, each data
// input's index and byte offset in the output, or nothing where the step is
// no Concat (or com.microsoft QLinearConcat, whose data inputs are 2, 5,
// 8, ...) that qualifies. The inputs must lie side by side in the output
// (outer dims before the axis all 1), each a planned value of known size
// that this step reads last and once, not yet another Concat's input or
// output (slice_bytes, group), starting on a 64-byte boundary (the kernels'
// vectors); the output a planned value of the data inputs' bytes.
std::vector<std::pair<size_t, int64_t>> Session::concat_slices(size_t i, const std::vector<int64_t>& bytes_of_slot,
                                                               const std::vector<Dims>* shapes,
                                                               const std::vector<int>& group,
                                                               const std::vector<int64_t>& slice_bytes) const {
  const Step& step = steps_[i];
  const ir::Node& node = *step.node;
  const bool plain = node.op_type == "Concat" && (node.domain.empty() || node.domain == "ai.onnx");
  const bool qlinear = node.op_type == "QLinearConcat" && node.domain == "com.microsoft";
  if (!(plain || qlinear) || step.outputs.size() != 1 || step.inputs.size() < (qlinear ? 5u : 1u)) return {};
  const int y = step.outputs[0];
  if (y < 0 || lifetimes_[static_cast<size_t>(y)].first < 0 || bytes_of_slot[static_cast<size_t>(y)] <= 0 ||
      slice_bytes[static_cast<size_t>(y)] > 0)
    return {};
  const ir::Value& out = *slot_values_[static_cast<size_t>(y)];
  // The output's shape as a run gave it, else as the model declares it.
  const Dims* shape = shapes && !(*shapes)[static_cast<size_t>(y)].empty() ? &(*shapes)[static_cast<size_t>(y)]
                      : out.has_shape                                       ? &out.shape
                                                                            : nullptr;
  if (!shape) return {};
  const int64_t rank = static_cast<int64_t>(shape->size());
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return {};
  for (int64_t d = 0; d < axis; ++d)
    if ((*shape)[static_cast<size_t>(d)] != 1) return {};
  std::vector<std::pair<size_t, int64_t>> slices;
  int64_t at = 0;
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const int x = step.inputs[k];
    const bool data = plain || (k >= 2 && (k - 2) % 3 == 0);
    if (!data) {
      // QLinearConcat's scales and zero points: constants, never a slice's bytes.
      if (x >= 0 && lifetimes_[static_cast<size_t>(x)].first >= 0) return {};
      continue;
    }
    if (x < 0 || lifetimes_[static_cast<size_t>(x)].first < 0 || lifetimes_[static_cast<size_t>(x)].second != static_cast<int>(i))
      return {};
    if (std::count(step.inputs.begin(), step.inputs.end(), x) != 1) return {};
    const int64_t bytes = bytes_of_slot[static_cast<size_t>(x)];
    if (bytes <= 0 || at % 64 != 0) return {};
    // Nothing of the input's group in another Concat, nor the output's group.
    for (size_t v = 0; v < group.size(); ++v)
      if (group[v] == group[static_cast<size_t>(x)] && (slice_bytes[v] > 0 || group[v] == group[static_cast<size_t>(y)]))
        return {};
    slices.emplace_back(k, at);
    at += bytes;
  }
  if (at != bytes_of_slot[static_cast<size_t>(y)]) return {};
  return slices;
}

std::vector<Session::PlannedValue> Session::memory_plan() const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  return memory_plan_->planned;
}

int Session::buffer_count() const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  return memory_plan_->buffer_count;
}

// Buffers of unknown size (bytes 0 in the plan: each value of the first run
// of a model that declares no shapes has one of its own) pass their bytes on
// through `spare` from a released value to the next one, the largest first
// (the kernel keeps them where they hold its output, interp/output.h). The
// first run of such a model kept a tensor per value before: efficientnet_b0
// float's peak RSS was set by it (140 MiB against ONNX Runtime's 134).
Tensor Session::Buffers::view(size_t b, int64_t offset, int64_t limit) {
  Tensor& t = storage[b];
  const int64_t need = plan->buffer_bytes[b];
  if (need > 0 && t.capacity() < static_cast<size_t>(need)) t = Tensor(DType::UInt8, {need});
  if (need == 0 && t.capacity() == 0 && !spare.empty()) {
    auto largest = std::max_element(spare.begin(), spare.end(),
                                    [](const Tensor& x, const Tensor& y) { return x.capacity() < y.capacity(); });
    t = std::move(*largest);
    spare.erase(largest);
  }
  return t.view(static_cast<size_t>(offset), static_cast<size_t>(limit));
}

void Session::Buffers::keep(size_t b, Tensor t) {
  if (plan->buffer_bytes[b] == 0) {
    if (t.owns_bytes()) spare.push_back(std::move(t));
    if (storage[b].owns_bytes()) spare.push_back(std::move(storage[b]));
    storage[b] = Tensor();
    return;
  }
  // A view (of the storage itself), or a smaller tensor, is dropped.
  if (t.owns_bytes() && t.capacity() > storage[b].capacity()) storage[b] = std::move(t);
}

Session::Buffers Session::take_buffers() const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  if (idle_buffers_.empty()) return Buffers{memory_plan_, std::vector<Tensor>(static_cast<size_t>(memory_plan_->buffer_count)), {}};
  Buffers b = std::move(idle_buffers_.back());
  idle_buffers_.pop_back();
  return b;
}

Session::Buffers Session::hand_over(Buffers old) const {
  // The run under the first plan left its tensors in its buffers and its
  // spare list; the new plan's buffers, largest first, each take the
  // smallest of those that holds it.
  // The next run then allocates nothing (without this it would allocate
  // every buffer again, paying the page faults of first touch twice).
  std::multimap<size_t, Tensor> spare;
  for (Tensor& t : old.storage)
    if (t.capacity() > 0) spare.emplace(t.capacity(), std::move(t));
  for (Tensor& t : old.spare)
    if (t.capacity() > 0) spare.emplace(t.capacity(), std::move(t));
  Buffers fresh{memory_plan_, std::vector<Tensor>(static_cast<size_t>(memory_plan_->buffer_count)), {}};
  std::vector<int> order(static_cast<size_t>(memory_plan_->buffer_count));
  std::iota(order.begin(), order.end(), 0);
  const std::vector<int64_t>& bytes = memory_plan_->buffer_bytes;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bytes[static_cast<size_t>(a)] > bytes[static_cast<size_t>(b)]; });
  for (int b : order) {
    auto it = spare.lower_bound(static_cast<size_t>(bytes[static_cast<size_t>(b)]));
    if (it == spare.end()) continue;
    fresh.storage[static_cast<size_t>(b)] = std::move(it->second);
    spare.erase(it);
  }
  return fresh;
}

void Session::give_back(Buffers buffers, const std::vector<std::pair<DType, int64_t>>& sizes,
                        const std::vector<Dims>& shapes) const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  if (!replanned_ && !sizes.empty()) {
    // The values' sizes are known now: buffers laid out for the old plan
    // (one per value of unknown size) are handed over to the new one.
    std::vector<int64_t> bytes_of_slot(sizes.size(), -1);
    for (size_t v = 0; v < sizes.size(); ++v)
      if (lifetimes_[v].first >= 0) bytes_of_slot[v] = shared_bytes(sizes[v].first, sizes[v].second);
    memory_plan_ = make_plan(bytes_of_slot, shapes.size() == sizes.size() ? &shapes : nullptr);
    replanned_ = true;
    idle_buffers_.clear();
    idle_buffers_.push_back(hand_over(std::move(buffers)));
    return;
  }
  if (buffers.plan == memory_plan_) idle_buffers_.push_back(std::move(buffers));
}

namespace {

Status check_input(const ir::Value& v, const Tensor& t) {
  // A value declared with no type at all (an outer-scope name read by an
  // If/Loop body) takes any kind; a declared one must match, except that an
  // optional also takes a bare tensor or sequence as its present value (a
  // Loop's optional carried value after the body returned the sequence).
  const bool declared = v.kind != Tensor::Kind::Tensor || v.dtype != DType::Undefined || v.has_shape;
  if (declared && t.kind() != v.kind && v.kind != Tensor::Kind::Optional) {
    const auto kind_name = [](Tensor::Kind k) {
      return k == Tensor::Kind::Tensor ? "a tensor" : k == Tensor::Kind::Sequence ? "a sequence" : "an optional";
    };
    return Status::bad_input("input '" + v.name() + "' is " + describe_value(t) + ", the model expects " + kind_name(v.kind));
  }
  if (!t.is_tensor()) return Status::ok();
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
  // Bodies of control-flow kernels run with this observer too (body_observer.h).
  const detail::CurrentObserver current_observer(observer);
  std::vector<Tensor> owned(slot_values_.size());
  std::vector<const Tensor*> ptr(constant_slots_);
  // Planned buffers go back to the session on every return path; a failed
  // run may leave some empty or stale, which the next run's kernels replace.
  struct Lease {
    const Session& s;
    Buffers buffers;
    std::vector<std::pair<DType, int64_t>> sizes;  // filled by a run that completes
    std::vector<Dims> shapes;                      // too, under a provisional plan
    ~Lease() { s.give_back(std::move(buffers), sizes, shapes); }
  } lease{*this, take_buffers(), {}, {}};
  const std::vector<int>& buffer_of_slot = lease.buffers.plan->buffer_of_slot;
  std::vector<std::pair<DType, int64_t>> sizes(slot_values_.size(), {DType::Undefined, 0});
  std::vector<Dims> shapes(lease.buffers.plan->provisional ? slot_values_.size() : 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *slot_values_[static_cast<size_t>(input_slots_[i])];
    if (!inputs[i]) return Status::internal("input '" + v.name() + "' is null");
    QT_RETURN_IF_ERROR(check_input(v, *inputs[i]));
    ptr[static_cast<size_t>(input_slots_[i])] = inputs[i];
    if (observer) observer(v, *inputs[i]);
  }
  const std::vector<int>& in_place_input = lease.buffers.plan->in_place_input;
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor> outs;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    in_ptrs.clear();
    for (int in : step.inputs) in_ptrs.push_back(in >= 0 ? ptr[static_cast<size_t>(in)] : nullptr);
    outs.resize(step.outputs.size());
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const int o = step.outputs[k];
      const int b = o >= 0 ? buffer_of_slot[static_cast<size_t>(o)] : -1;
      const MemoryPlan& mp = *lease.buffers.plan;
      outs[k] = b >= 0 ? lease.buffers.view(static_cast<size_t>(b), mp.offset_of_slot[static_cast<size_t>(o)],
                                            mp.slice_bytes[static_cast<size_t>(o)])
                       : Tensor();
    }
    // In place when planned and, in this run, every other input broadcasts
    // into the written one's shape, so the output (the inputs' broadcast,
    // Kernel::may_overwrite_input) has that same shape. Equal sizes in the
    // plan do not settle it for dynamic shapes: Add(x[1,C], b) with b [1,C]
    // on the first run and [4,C] later would make the kernel replace the
    // tensor it still reads. A reshaping kernel (Kernel::reshapes_input)
    // keeps input 0's element count whatever its other inputs are.
    const int over = in_place_input[i];  // the input written over, or -1
    bool in_place = over >= 0;
    if (in_place && !step.kernel->reshapes_input()) {
      const Tensor& xt = owned[static_cast<size_t>(step.inputs[static_cast<size_t>(over)])];
      for (size_t j = 0; in_place && j < in_ptrs.size(); ++j) {
        if (j == static_cast<size_t>(over) || !in_ptrs[j]) continue;
        const auto b = kernels::broadcast_shapes(xt.shape(), in_ptrs[j]->shape());
        in_place = b && *b == xt.shape();
      }
    }
    // Out of place after all: the planned buffer is the input's, still read.
    if (over >= 0 && !in_place) outs[0] = Tensor();
    if (in_place) {
      // The output takes the input's tensor, which the kernel reads as its
      // output (Kernel::may_overwrite_input); the input is released after this step.
      const size_t x = static_cast<size_t>(step.inputs[static_cast<size_t>(over)]);
      sizes[x] = {owned[x].dtype(), owned[x].size()};
      if (!shapes.empty()) shapes[x] = owned[x].shape();
      outs[0] = std::move(owned[x]);
      in_ptrs[static_cast<size_t>(over)] = &outs[0];
    }
    Status st = step.kernel->run(in_ptrs, outs);
    if (!st.is_ok()) return st.with_context(step.node->describe());
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      int o = step.outputs[k];
      if (o < 0) continue;
      owned[static_cast<size_t>(o)] = std::move(outs[k]);
      ptr[static_cast<size_t>(o)] = &owned[static_cast<size_t>(o)];
      if (observer) observer(*slot_values_[static_cast<size_t>(o)], owned[static_cast<size_t>(o)]);
    }
    for (const MappedRegion* m : step.release_mapped) m->release_pages();
    for (int r : step.release_after) {
      const int b = buffer_of_slot[static_cast<size_t>(r)];
      // A value written over in place holds nothing now (its tensor is the output's).
      if (in_place && r == step.inputs[static_cast<size_t>(over)]) {
        ptr[static_cast<size_t>(r)] = nullptr;
        continue;
      }
      sizes[static_cast<size_t>(r)] = {owned[static_cast<size_t>(r)].dtype(), owned[static_cast<size_t>(r)].size()};
      if (!shapes.empty()) shapes[static_cast<size_t>(r)] = owned[static_cast<size_t>(r)].shape();
      // A Concat's input shares its buffer with the Concat's output, still
      // live: a tensor of its own (a run whose shapes outgrew the plan) is
      // dropped, never made the buffer.
      if (b >= 0 && lease.buffers.plan->slice_bytes[static_cast<size_t>(r)] == 0)
        lease.buffers.keep(static_cast<size_t>(b), std::move(owned[static_cast<size_t>(r)]));
      owned[static_cast<size_t>(r)] = Tensor();
      ptr[static_cast<size_t>(r)] = nullptr;
    }
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < output_slots_.size(); ++k) {
    const size_t o = static_cast<size_t>(output_slots_[k]);
    const Tensor* t = ptr[o];
    if (!t) return Status::internal("graph output '" + slot_values_[o]->name() + "' was not computed");
    // A run's own result moves out unless the same value is listed again later.
    bool listed_again = false;
    for (size_t j = k + 1; j < output_slots_.size(); ++j) listed_again = listed_again || output_slots_[j] == output_slots_[k];
    if (t == &owned[o] && !listed_again)
      result.push_back(std::move(owned[o]));
    else
      result.push_back(*t);
  }
  lease.sizes = std::move(sizes);
  lease.shapes = std::move(shapes);
  return result;
}

}  // namespace quant::interp
