#include "libquant/tune/layer_alone.h"

#include "libquant/passes/extract.h"
#include "libquant/passes/quant_points.h"

namespace quant::tune {
namespace {


// The nodes of one layer's mini model in running order and the value it
// outputs; `inputs` gets the float values it reads. Empty reason: built.
struct MiniPlan {
  std::vector<const ir::Node*> nodes;
  const ir::Node* fused = nullptr;  // a Relu/Clip after the layer
  const ir::Value* output = nullptr;
  std::string twin;
  std::string reason;
};

MiniPlan plan_for(const ir::Graph& g, const ir::Node& layer) {
  MiniPlan p;
  for (const ir::Value* v : layer.inputs) {
    const ir::Node* d = v ? v->producer : nullptr;
    if (!passes::is_dequantize(d)) continue;  // a float input: read from the reference as it is
    if (ir::constant_data(d->input(0))) {
      p.nodes.push_back(d);
      continue;
    }
    const ir::Node* q = d->input(0) ? d->input(0)->producer : nullptr;
    if (!passes::is_quantize(q) || !q->input(0) || ir::constant_data(q->input(0))) {
      p.reason = "input '" + v->name() + "' is not a Q/DQ pair on a float tensor";
      return p;
    }
    p.nodes.push_back(q);
    p.nodes.push_back(d);
  }
  p.nodes.push_back(&layer);
  const ir::Value* out = layer.outputs.empty() ? nullptr : layer.outputs[0];
  if (!out) {
    p.reason = "the layer has no output";
    return p;
  }
  auto sole = [&](const ir::Value* v) -> const ir::Node* {
    auto users = g.consumers(v);
    return users.size() == 1 && !g.is_graph_output(v) ? users[0] : nullptr;
  };
  const ir::Node* next = sole(out);
  if (next && next->domain.empty() && (next->op_type == "Relu" || next->op_type == "Clip") && next->input(0) == out) {
    p.nodes.push_back(next);
    p.fused = next;
    out = next->outputs[0];
    next = sole(out);
  }
  p.twin = out->name();
  if (passes::is_quantize(next)) {
    const ir::Node* d = sole(next->outputs.empty() ? nullptr : next->outputs[0]);
    if (passes::is_dequantize(d)) {
      p.nodes.push_back(next);
      p.nodes.push_back(d);
      out = d->outputs[0];
    }
  }
  p.output = out;
  return p;
}

}  // namespace

Expected<std::unique_ptr<LayerAlone>> LayerAlone::create(const ir::Graph& quantized, const ir::Graph& reference,
                                                         const RunSetup& setup) {
  auto la = std::unique_ptr<LayerAlone>(new LayerAlone());
  QT_ASSIGN_OR_RETURN(auto layers, passes::find_quant_layers(quantized));
  for (size_t i = 0; i < layers.size(); ++i) {
    const ir::Node& n = *layers[i].node;
    Layer l;
    l.node = n.name.empty() ? n.op_type + " #" + std::to_string(i) : n.name;
    l.op_type = n.op_type;
    l.order = static_cast<int>(i);
    MiniPlan plan = plan_for(quantized, n);
    if (!n.name.empty()) l.members.push_back(n.name);
    if (plan.fused && !plan.fused->name.empty()) l.members.push_back(plan.fused->name);
    std::unique_ptr<ir::Graph> mini;
    if (plan.reason.empty()) {
      auto g = passes::extract_subgraph(quantized, plan.nodes, {plan.output});
      if (!g) plan.reason = g.status().message();
      else mini = std::move(g).value();
    }
    if (mini) {
      for (const ir::Value* v : mini->inputs)
        if (!reference.find_value(v->name())) plan.reason = "input '" + v->name() + "' has no float twin in the reference";
      if (!reference.find_value(plan.twin)) plan.reason = "output '" + plan.twin + "' has no float twin in the reference";
    }
    if (plan.reason.empty()) {
      Mini m;
      m.layer = la->layers_.size();
      for (const ir::Value* v : mini->inputs) m.inputs.push_back(v->name());
      m.twin = plan.twin;
      auto run = prepare(std::move(mini), setup);
      if (!run) {
        plan.reason = "its mini model does not run: " + run.status().message();
      } else {
        m.run = std::move(run).value();
        la->wanted_.insert(m.inputs.begin(), m.inputs.end());
        la->wanted_.insert(m.twin);
        la->minis_.push_back(std::move(m));
      }
    }
    l.skipped = plan.reason;
    la->layers_.push_back(std::move(l));
  }
  return la;
}

interp::Observer LayerAlone::reference_observer() {
  return [this](const ir::Value& v, const Tensor& t) {
    if (wanted_.count(v.name())) cache_.insert_or_assign(v.name(), t);
  };
}

Status LayerAlone::end_sample() {
  for (const Mini& m : minis_) {
    Layer& l = layers_[m.layer];
    std::vector<Tensor> ins;
    bool complete = true;
    for (const std::string& name : m.inputs) {
      auto it = cache_.find(name);
      if (it == cache_.end()) complete = false;
      else ins.push_back(it->second);
    }
    auto twin = cache_.find(m.twin);
    if (!complete || twin == cache_.end()) continue;  // not computed for this sample (e.g. a branch not taken)
    auto out = m.run.session->run(ins);
    if (!out) return out.status().with_context("layer '" + l.node + "' alone");
    if ((*out)[0].shape() != twin->second.shape() || (*out)[0].dtype() != DType::Float32) continue;
    QT_RETURN_IF_ERROR(l.stats.add(twin->second, (*out)[0]));
  }
  cache_.clear();
  return Status::ok();
}

}  // namespace quant::tune
