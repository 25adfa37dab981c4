#include "libquant/passes/extract.h"

#include <map>

namespace quant::passes {

Expected<std::unique_ptr<ir::Graph>> extract_subgraph(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                                                      const std::vector<const ir::Value*>& outputs) {
  auto out = std::make_unique<ir::Graph>();
  out->ir_version = g.ir_version;
  out->opset_imports = g.opset_imports;
  std::map<const ir::Value*, ir::Value*> copies;
  auto copy_meta = [](const ir::Value& from, ir::Value& to) {
    to.dtype = from.dtype;
    to.has_shape = from.has_shape;
    to.shape = from.shape;
    to.dim_names = from.dim_names;
  };
  // Values produced by the copied nodes: known before any is read.
  std::map<const ir::Value*, bool> produced;
  for (const ir::Node* n : nodes)
    for (const ir::Value* v : n->outputs)
      if (v) produced[v] = true;
  auto value_of = [&](const ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;
    auto it = copies.find(v);
    if (it != copies.end()) return it->second;
    ir::Value* c = out->add_value(v->name());
    copy_meta(*v, *c);
    if (const Tensor* t = ir::constant_data(v); t && !produced.count(v)) {
      c->constant = std::make_unique<Tensor>(*t);
    } else if (!produced.count(v)) {
      out->inputs.push_back(c);
    }
    copies[v] = c;
    return c;
  };
  for (const ir::Node* n : nodes) {
    std::vector<ir::Value*> ins, outs;
    for (const ir::Value* v : n->inputs) ins.push_back(value_of(v));
    for (const ir::Value* v : n->outputs) outs.push_back(value_of(v));
    ir::Node* c = out->add_node(n->op_type, std::move(ins), std::move(outs), n->name, n->domain);
    c->attributes = n->attributes;
  }
  for (const ir::Value* v : outputs) {
    auto it = copies.find(v);
    if (it == copies.end() || !produced.count(v))
      return Status::bad_input("extract_subgraph: output '" + (v ? v->name() : std::string()) + "' is not produced by the nodes");
    out->outputs.push_back(it->second);
  }
  return out;
}

}  // namespace quant::passes
