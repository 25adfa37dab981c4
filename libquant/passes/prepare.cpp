#include "libquant/passes/prepare.h"

#include <algorithm>
#include <cmath>

namespace quant::passes {

int constants_to_initializers(ir::Graph& graph) {
  std::vector<ir::Node*> constants;
  for (const auto& n : graph.nodes())
    if (n->op_type == "Constant" && n->domain.empty() && n->outputs.size() == 1 && n->outputs[0] &&
        !graph.is_graph_output(n->outputs[0]) && ir::constant_data(n->outputs[0]))
      constants.push_back(n.get());
  for (ir::Node* n : constants) {
    ir::Value* v = n->outputs[0];
    Tensor data = *ir::constant_data(v);
    graph.remove_node(n);
    v->dtype = data.dtype();
    v->has_shape = true;
    v->shape = data.shape();
    v->dim_names.assign(v->shape.size(), "");
    v->constant = std::make_unique<Tensor>(std::move(data));
  }
  return static_cast<int>(constants.size());
}

namespace {

// The constant float32 tensor behind `v` with `n` elements, or nullptr.
const Tensor* float_vector(const ir::Value* v, int64_t n) {
  const Tensor* t = ir::constant_data(v);
  return t && t->dtype() == DType::Float32 && t->size() == n ? t : nullptr;
}

// Rewrites W and b of `producer` (Conv: channel dim 0 of W; Gemm: N) with the
// per-channel factor s and shift; returns false when the layout does not fit.
bool fold_into(ir::Graph& g, ir::Node* producer, const std::vector<double>& s, const std::vector<double>& shift) {
  const int64_t m = static_cast<int64_t>(s.size());
  ir::Value* wv = producer->input(1);
  const Tensor* w = ir::constant_data(wv);
  if (!w || w->dtype() != DType::Float32 || g.consumers(wv).size() != 1) return false;
  const bool gemm = producer->op_type == "Gemm";
  const bool trans_b = gemm && producer->attr_int("transB", 0) != 0;
  if (gemm && (w->rank() != 2 || producer->attr_float("alpha", 1) != 1.0f)) return false;
  // Channel axis of W: Conv 0, Gemm N (0 with transB, else 1).
  const int64_t axis = gemm && !trans_b ? 1 : 0;
  if (w->dim(axis) != m) return false;
  ir::Value* bv = producer->input(2);
  const Tensor* b = bv ? ir::constant_data(bv) : nullptr;
  if (bv && (!b || b->dtype() != DType::Float32 || b->size() != m || g.consumers(bv).size() != 1)) return false;
  if (gemm && bv && producer->attr_float("beta", 1) != 1.0f) return false;

  Tensor nw(*w);
  float* pw = nw.data<float>();
  const int64_t inner = axis == 0 ? w->size() / m : 1;
  const int64_t rows = axis == 0 ? 1 : w->dim(0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < m; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        float& x = axis == 0 ? pw[c * inner + i] : pw[r * m + c];
        x = static_cast<float>(x * s[static_cast<size_t>(c)]);
      }
  Tensor nb(DType::Float32, {m});
  for (int64_t c = 0; c < m; ++c) {
    const double old = b ? b->data<float>()[c] : 0.0;
    nb.data<float>()[c] = static_cast<float>(old * s[static_cast<size_t>(c)] + shift[static_cast<size_t>(c)]);
  }
  *wv->constant = std::move(nw);
  if (b) {
    *bv->constant = std::move(nb);
  } else {
    ir::Value* nbv = g.add_value(g.unique_name(producer->name + "_folded_bias"));
    nbv->dtype = DType::Float32;
    nbv->has_shape = true;
    nbv->shape = {m};
    nbv->dim_names = {""};
    nbv->constant = std::make_unique<Tensor>(std::move(nb));
    producer->inputs.resize(3, nullptr);
    producer->inputs[2] = nbv;
  }
  return true;
}

}  // namespace

Status fold_batchnorm(ir::Graph& g, std::vector<std::string>& notes) {
  std::vector<ir::Node*> bns;
  for (const auto& n : g.nodes())
    if (n->op_type == "BatchNormalization" && n->domain.empty()) bns.push_back(n.get());
  for (ir::Node* bn : bns) {
    if (bn->attr_int("training_mode", 0) != 0 || bn->inputs.size() < 5) continue;
    if (bn->outputs.size() > 1 && std::any_of(bn->outputs.begin() + 1, bn->outputs.end(), [](auto* v) { return v != nullptr; }))
      continue;
    ir::Value* x = bn->input(0);
    ir::Node* producer = x ? x->producer : nullptr;
    if (!producer || !producer->domain.empty() || (producer->op_type != "Conv" && producer->op_type != "Gemm")) continue;
    if (g.consumers(x).size() != 1 || g.is_graph_output(x)) continue;
    const Tensor* w = ir::constant_data(producer->input(1));
    if (!w || w->rank() < 2) continue;
    const int64_t m = producer->op_type == "Gemm" && producer->attr_int("transB", 0) == 0 ? w->dim(1) : w->dim(0);
    const Tensor *gamma = float_vector(bn->input(1), m), *beta = float_vector(bn->input(2), m),
                 *mean = float_vector(bn->input(3), m), *var = float_vector(bn->input(4), m);
    if (!gamma || !beta || !mean || !var) continue;
    const double eps = bn->attr_float("epsilon", 1e-5f);
    std::vector<double> s(static_cast<size_t>(m)), shift(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      const size_t i = static_cast<size_t>(c);
      s[i] = gamma->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + eps);
      shift[i] = beta->data<float>()[c] - mean->data<float>()[c] * s[i];
    }
    if (!fold_into(g, producer, s, shift)) continue;
    // The producer now writes the BatchNormalization's output directly.
    ir::Value* y = bn->outputs[0];
    notes.push_back("folded BatchNormalization '" + bn->name + "' into " + producer->describe());
    g.remove_node(bn);
    producer->outputs[0] = y;
    y->producer = producer;
  }
  g.remove_unused_values();
  return ir::verify(g);
}

}  // namespace quant::passes
