#include "libquant/passes/quant_points.h"

#include <map>

#include "libquant/passes/graph_edit.h"

namespace quant::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }

// The node whose output `q` quantizes, looking through a fused Relu/Clip and
// through DQ -> Q requantization pairs; nullptr for a graph input (or a
// constant).
const ir::Node* quantized_producer(const ir::Node* q) {
  const ir::Node* p = q->input(0) ? q->input(0)->producer : nullptr;
  for (int steps = 0; p && steps < 8; ++steps) {
    if (is_dequantize(p) && p->input(0) && is_quantize(p->input(0)->producer)) {
      const ir::Node* earlier = p->input(0)->producer;
      p = earlier->input(0) ? earlier->input(0)->producer : nullptr;
      continue;
    }
    if (is_op(p, "Relu") || is_op(p, "Clip")) {
      p = p->input(0) ? p->input(0)->producer : nullptr;
      continue;
    }
    return p;
  }
  return p;
}

bool reads_dq(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (v && is_dequantize(v->producer)) return true;
  return false;
}

}  // namespace

bool is_quantize(const ir::Node* n) {
  return n && n->op_type == "QuantizeLinear" && (n->domain.empty() || n->domain == "com.microsoft");
}
bool is_dequantize(const ir::Node* n) {
  return n && n->op_type == "DequantizeLinear" && (n->domain.empty() || n->domain == "com.microsoft");
}

Expected<std::vector<QuantLayer>> find_quant_layers(const ir::Graph& g) {
  QT_ASSIGN_OR_RETURN(auto order, g.topological_order());
  std::vector<QuantLayer> layers;
  std::map<const ir::Node*, size_t> index;
  for (ir::Node* n : order) {
    if (is_quantize(n) || is_dequantize(n) || !n->domain.empty() || !reads_dq(*n)) continue;
    QuantLayer l;
    l.node = n;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const ir::Value* v = n->inputs[i];
      ir::Node* d = v ? v->producer : nullptr;
      if (is_dequantize(d) && ir::constant_data(d->input(0))) l.constant_dqs.emplace_back(i, d);
    }
    index[n] = layers.size();
    layers.push_back(std::move(l));
  }
  for (ir::Node* n : order) {
    if (!is_quantize(n) || !n->input(0) || ir::constant_data(n->input(0))) continue;
    const ir::Node* p = quantized_producer(n);
    if (p) {
      auto it = index.find(p);
      if (it != index.end()) layers[it->second].activation_qs.push_back(n);
      continue;
    }
    // A graph input's Q: the first layer reading one of its DQs.
    size_t first = layers.size();
    for (ir::Node* d : g.consumers(n->outputs.empty() ? nullptr : n->outputs[0]))
      if (is_dequantize(d))
        for (ir::Node* reader : g.consumers(d->outputs.empty() ? nullptr : d->outputs[0])) {
          auto it = index.find(reader);
          if (it != index.end()) first = std::min(first, it->second);
        }
    if (first < layers.size()) layers[first].activation_qs.push_back(n);
  }
  return layers;
}

FloatResult make_layers_float(ir::Graph& g, const std::vector<QuantLayer>& layers, const std::set<size_t>& which,
                              const FloatConstant& float_constant) {
  FloatResult r;
  std::vector<ir::Node*> maybe_dead;
  for (size_t i : which) {
    const QuantLayer& l = layers.at(i);
    for (const auto& [input, dq] : l.constant_dqs) {
      const Tensor* t = float_constant ? float_constant(*l.node, input) : nullptr;
      const ir::Value* was = l.node->inputs[input];
      if (!t || !was || (was->has_shape && t->shape() != was->shape)) {
        ++r.kept_constants;
        continue;
      }
      l.node->inputs[input] = add_constant(g, was->name() + "_float", *t);
      maybe_dead.push_back(dq);
      ++r.float_constants;
    }
    for (ir::Node* q : l.activation_qs) {
      ir::Value* real = q->input(0);
      for (ir::Node* d : g.consumers(q->outputs.empty() ? nullptr : q->outputs[0]))
        if (is_dequantize(d) && !d->outputs.empty() && d->outputs[0]) {
          g.replace_all_uses(d->outputs[0], real);
          maybe_dead.push_back(d);
        }
      maybe_dead.push_back(q);
      ++r.bypassed_qs;
    }
  }
  // DQs before Qs: a Q loses its readers when its DQs go.
  std::set<ir::Node*> removed;
  for (int pass = 0; pass < 2; ++pass)
    for (ir::Node* n : maybe_dead) {
      if (removed.count(n)) continue;
      bool used = false;
      for (const ir::Value* v : n->outputs)
        if (v && (!g.consumers(v).empty() || g.is_graph_output(v))) used = true;
      if (!used) {
        removed.insert(n);
        g.remove_node(n);
      }
    }
  g.remove_unused_values();
  return r;
}

FloatConstant constants_of(const ir::Graph& float_model) {
  std::map<std::string, const ir::Node*> by_name;
  for (const auto& n : float_model.nodes())
    if (!n->name.empty()) by_name[n->name] = n.get();
  return [by_name](const ir::Node& node, size_t input) -> const Tensor* {
    auto it = by_name.find(node.name);
    if (node.name.empty() || it == by_name.end() || it->second->op_type != node.op_type) return nullptr;
    const Tensor* t = ir::constant_data(it->second->input(input));
    return t && t->dtype() == DType::Float32 ? t : nullptr;
  };
}

}  // namespace quant::passes
