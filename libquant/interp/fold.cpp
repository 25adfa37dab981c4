#include "libquant/interp/fold.h"

#include <set>

#include "libquant/interp/kernel.h"

namespace quant::interp {

Expected<int> fold_constants(ir::Graph& g) {
  static const std::set<std::string> kNeverFold = {"DequantizeLinear", "If", "Loop", "Scan", "RandomNormal",
                                                   "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                                   "Multinomial", "Bernoulli", "Dropout"};
  QT_ASSIGN_OR_RETURN(auto order, g.topological_order());
  int folded = 0;
  for (ir::Node* n : order) {
    if (!n->domain.empty() || kNeverFold.count(n->op_type) || n->op_type == "Constant") continue;
    bool all_constant = !n->inputs.empty();
    for (const ir::Value* v : n->inputs) all_constant &= v == nullptr || ir::constant_data(v) != nullptr;
    if (!all_constant) continue;
    bool outputs_ok = true;
    for (const ir::Value* v : n->outputs) outputs_ok &= v != nullptr && !g.is_graph_output(v);
    if (!outputs_ok) continue;
    KernelFactory factory = find_kernel_factory(n->domain, n->op_type);
    if (!factory) continue;
    auto kernel = factory(KernelContext{*n, g.opset(n->domain), &g});
    if (!kernel) return kernel.status().with_context(n->describe());
    std::vector<const Tensor*> ins;
    for (const ir::Value* v : n->inputs) ins.push_back(v ? ir::constant_data(v) : nullptr);
    std::vector<Tensor> outs(n->outputs.size());
    QT_RETURN_IF_ERROR((*kernel)->run(ins, outs).with_context("folding " + n->describe()));
    std::vector<ir::Value*> results = n->outputs;
    g.remove_node(n);
    for (size_t k = 0; k < results.size(); ++k) {
      ir::Value* v = results[k];
      v->dtype = outs[k].dtype();
      v->has_shape = true;
      v->shape = outs[k].shape();
      v->dim_names.assign(v->shape.size(), "");
      v->constant = std::make_unique<Tensor>(std::move(outs[k]));
    }
    ++folded;
  }
  g.remove_unused_values();
  QT_RETURN_IF_ERROR(ir::verify(g));
  return folded;
}

}  // namespace quant::interp
