#include "libquant/passes/smooth_quant.h"

#include <algorithm>
#include <cstring>

#include "libquant/passes/graph_edit.h"

namespace quant::passes {
namespace {

// A float32 constant read by `node` alone (so that scaling it changes nothing else).
Tensor* own_float_constant(const ir::Graph& g, const ir::Node& node, size_t index) {
  ir::Value* v = node.input(index);
  if (!v || !v->constant || v->constant->dtype() != DType::Float32 || g.consumers(v).size() != 1) return nullptr;
  return v->constant.get();
}

// K of a MatMul / Gemm that can take smoothing of its first input, or 0.
int64_t smoothable_k(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || (n.op_type != "MatMul" && n.op_type != "Gemm")) return 0;
  if (n.input(0) == n.input(1)) return 0;
  const Tensor* w = own_float_constant(g, n, 1);
  if (!w || w->rank() != 2) return 0;
  if (n.op_type == "Gemm") {
    // ONNX Gemm (opset 13): Y = alpha A' B' + beta C; with transA the channel K is A's first axis.
    if (n.attr_int("transA", 0) != 0) return 0;
    return n.attr_int("transB", 0) ? w->dim(1) : w->dim(0);
  }
  return w->dim(0);
}

bool trans_b(const ir::Node& n) { return n.op_type == "Gemm" && n.attr_int("transB", 0) != 0; }

// Whether X / s may replace X: X is no graph output, and every reader outside
// the group reads it as a plain input (a subgraph reading it by name could not
// be given the restored X).
bool can_fold(const ir::Graph& g, const SmoothGroup& group) {
  if (g.is_graph_output(group.input)) return false;
  for (const ir::Node* n : g.consumers(group.input))
    if (std::find(n->implicit_inputs.begin(), n->implicit_inputs.end(), group.input) != n->implicit_inputs.end()) return false;
  return true;
}

// The LayerNormalization producing X that can take gamma /= s, beta /= s; nullptr if none.
ir::Node* foldable_layer_norm(const ir::Graph& g, const SmoothGroup& group) {
  ir::Node* p = group.input->producer;
  if (!p || !can_fold(g, group) || !p->domain.empty() || p->op_type != "LayerNormalization") return nullptr;
  if (p->outputs.empty() || p->outputs[0] != group.input) return nullptr;
  // ONNX LayerNormalization (opset 17): normalizes axes [axis, rank); the
  // scale and bias broadcast over them. Only the last axis alone is per-channel.
  const int64_t axis = p->attr_int("axis", -1);
  const bool last = axis == -1 || (group.input->has_shape && axis == static_cast<int64_t>(group.input->shape.size()) - 1);
  if (!last) return nullptr;
  const Tensor* scale = own_float_constant(g, *p, 1);
  if (!scale || scale->size() != group.channels || scale->rank() != 1) return nullptr;
  if (p->input(2)) {
    const Tensor* bias = own_float_constant(g, *p, 2);
    if (!bias || bias->size() != group.channels || bias->rank() != 1) return nullptr;
  }
  return p;
}

// A per-channel constant operand of an element-wise `node`: a float32 constant
// of its own holding K values along the last axis (ONNX broadcasting: every
// other dim 1); its input index, or -1.
int per_channel_operand(const ir::Graph& g, const ir::Node& node, int64_t k) {
  for (size_t i = 0; i < 2; ++i) {
    const Tensor* t = own_float_constant(g, node, i);
    if (t && t->rank() >= 1 && t->size() == k && t->shape().back() == k) return static_cast<int>(i);
  }
  return -1;
}

// The constants whose division by s divides X by s, when X's producer is an
// affine op per channel read by the group alone: Mul(x, c) -> {c};
// Add(Mul(x, c), b) -> {c, b} (the Mul's output read by the Add alone);
// X's readers outside the group are given X back by restore_readers;
// `changed` gets the intermediate value. Empty when X's producer is not one.
std::vector<ir::Value*> foldable_affine(const ir::Graph& g, const SmoothGroup& group, std::vector<std::string>& changed) {
  ir::Node* p = group.input->producer;
  if (!p || !can_fold(g, group) || !p->domain.empty() || (p->op_type != "Mul" && p->op_type != "Add")) return {};
  const int bi = per_channel_operand(g, *p, group.channels);
  if (bi < 0) return {};
  if (p->op_type == "Mul") return {p->input(static_cast<size_t>(bi))};
  ir::Value* m = p->input(static_cast<size_t>(1 - bi));
  ir::Node* mul = m ? m->producer : nullptr;
  if (!mul || !mul->domain.empty() || mul->op_type != "Mul" || g.consumers(m).size() != 1 || g.is_graph_output(m)) return {};
  const int ci = per_channel_operand(g, *mul, group.channels);
  if (ci < 0) return {};
  changed.push_back(m->name());
  return {mul->input(static_cast<size_t>(ci)), p->input(static_cast<size_t>(bi))};
}

// x * factors (per channel of the last axis) as a float Mul inserted before
// `before`, named after x with `suffix`; returns the Mul.
ir::Node* insert_channel_mul(ir::Graph& g, ir::Node* before, ir::Value* x, const std::vector<float>& factors,
                             const std::string& suffix) {
  Tensor scale(DType::Float32, {static_cast<int64_t>(factors.size())});
  std::copy(factors.begin(), factors.end(), scale.data<float>());
  ir::Value* c = add_constant(g, x->name() + "_" + suffix + "_scale", std::move(scale));
  ir::Value* y = g.add_value(g.unique_name(x->name() + "_" + suffix + "ed"));
  y->dtype = x->dtype;
  y->has_shape = x->has_shape;
  y->shape = x->shape;
  y->dim_names = x->dim_names;
  return g.insert_node(before, "Mul", {x, c}, {y}, g.unique_name(x->name() + "_" + suffix));
}

// After X became X / s: the readers of X outside the group read X / s * s
// from a float Mul (its output has X's values: the profile's range applies,
// and is measured again with the rest). Returns the Mul, or nullptr when the
// group reads X alone.
ir::Node* restore_readers(ir::Graph& g, const SmoothGroup& group, const std::vector<float>& s) {
  std::vector<ir::Node*> others;
  for (const auto& n : g.nodes())
    if (std::find(group.layers.begin(), group.layers.end(), n.get()) == group.layers.end() &&
        std::find(n->inputs.begin(), n->inputs.end(), group.input) != n->inputs.end())
      others.push_back(n.get());
  if (others.empty()) return nullptr;
  ir::Node* mul = insert_channel_mul(g, others.front(), group.input, s, "unsmooth");
  for (ir::Node* n : others)
    for (ir::Value*& in : n->inputs)
      if (in == group.input) in = mul->outputs[0];
  return mul;
}

}  // namespace

std::vector<SmoothGroup> find_smooth_groups(const ir::Graph& graph) {
  std::vector<SmoothGroup> groups;
  std::map<const ir::Value*, size_t> index;
  for (const auto& node : graph.nodes()) {
    const int64_t k = smoothable_k(graph, *node);
    ir::Value* x = node->input(0);
    if (k <= 0 || !x || x->is_constant()) continue;
    auto it = index.find(x);
    if (it == index.end()) {
      it = index.emplace(x, groups.size()).first;
      groups.push_back(SmoothGroup{x, {}, false, k});
    }
    SmoothGroup& g = groups[it->second];
    if (g.channels != k) continue;  // a reader disagreeing on K stays out (and keeps reading X)
    g.layers.push_back(node.get());
  }
  for (SmoothGroup& g : groups) {
    size_t readers = graph.consumers(g.input).size();
    g.all_readers = readers == g.layers.size() && !graph.is_graph_output(g.input);
  }
  return groups;
}

std::vector<calib::WeightView> group_weights(const SmoothGroup& group) {
  std::vector<calib::WeightView> views;
  for (const ir::Node* n : group.layers) views.push_back({n->input(1)->constant.get(), trans_b(*n)});
  return views;
}

Expected<SmoothReport> smooth_quant(ir::Graph& graph, const profile::Profile& profile, const SmoothOptions& options,
                                    const std::string& profile_path) {
  if (profile.version < 2)
    return Status::bad_input(profile_path + ": profile version " + std::to_string(profile.version) +
                             " has no per-channel absmax; --smooth-quant needs a profile made by this qprofile "
                             "(version 2): run qprofile again");
  SmoothReport report;
  for (SmoothGroup& group : find_smooth_groups(graph)) {
    const std::string& name = group.input->name();
    auto it = profile.tensors.find(name);
    if (it == profile.tensors.end() || static_cast<int64_t>(it->second.channel_absmax.size()) != group.channels) {
      report.notes.push_back("smooth-quant: '" + name + "' left: the profile has no channel absmax of length " +
                             std::to_string(group.channels) + " for it");
      continue;
    }
    const auto a = options.alpha_by_input.find(name);
    const double alpha = a == options.alpha_by_input.end() ? options.alpha : a->second;
    std::vector<float> w_absmax;
    for (const auto& v : group_weights(group)) calib::fold_weight_channel_absmax(v, w_absmax);
    const std::vector<float> s = calib::smoothing_factors(it->second.channel_absmax, w_absmax, alpha);

    SmoothReport::Layer layer;
    layer.input = name;
    layer.alpha = alpha;
    layer.max_factor = *std::max_element(s.begin(), s.end());
    for (ir::Node* n : group.layers) {
      layer.nodes.push_back(n->name);
      calib::scale_weight_channels(*n->input(1)->constant, trans_b(*n), s);
    }
    std::vector<ir::Value*> affine;
    if (ir::Node* ln = foldable_layer_norm(graph, group)) {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (!ln->input(i)) continue;
        float* p = ln->input(i)->constant->data<float>();
        for (size_t j = 0; j < s.size(); ++j) p[j] /= s[j];
      }
      layer.folded_into = "LayerNormalization '" + ln->name + "'";
      report.changed_tensors.insert(name);
    } else if (std::vector<std::string> inner; !(affine = foldable_affine(graph, group, inner)).empty()) {
      for (ir::Value* c : affine) {
        float* p = c->constant->data<float>();
        for (size_t j = 0; j < s.size(); ++j) p[j] /= s[j];
      }
      layer.folded_into = group.input->producer->op_type + " '" + group.input->producer->name + "'";
      report.changed_tensors.insert(name);
      report.changed_tensors.insert(inner.begin(), inner.end());
    } else {
      std::vector<float> inv(s.size());
      for (size_t j = 0; j < s.size(); ++j) inv[j] = 1.0f / s[j];
      ir::Node* mul = insert_channel_mul(graph, group.layers.front(), group.input, inv, "smooth");
      for (ir::Node* n : group.layers) n->inputs[0] = mul->outputs[0];
      layer.mul = mul->name;
      report.float_nodes.insert(mul->name);
      report.changed_tensors.insert(mul->outputs[0]->name());
    }
    if (!layer.folded_into.empty()) {
      if (ir::Node* mul = restore_readers(graph, group, s)) {
        layer.mul = mul->name;
        report.float_nodes.insert(mul->name);
        report.changed_tensors.insert(mul->outputs[0]->name());
      }
    }
    report.layers.push_back(std::move(layer));
  }
  return report;
}

RowSampler::RowSampler(const ir::Graph& graph, int64_t max_rows) : max_rows_(max_rows) {
  for (const SmoothGroup& g : find_smooth_groups(graph)) inputs_[g.input] = g.channels;
}

void RowSampler::observe(const ir::Value& value, const Tensor& tensor) {
  auto it = inputs_.find(&value);
  if (it == inputs_.end() || tensor.dtype() != DType::Float32 || tensor.rank() < 1 || tensor.shape().back() != it->second)
    return;
  Rows& r = rows_[value.name()];
  r.k = it->second;
  const int64_t take = std::min(max_rows_ - r.rows(), tensor.size() / r.k);
  if (take <= 0) return;
  const float* x = tensor.data<float>();
  r.values.insert(r.values.end(), x, x + take * r.k);
}

}  // namespace quant::passes
