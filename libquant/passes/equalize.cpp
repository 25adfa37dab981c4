#include "libquant/passes/equalize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "libquant/profile/collector.h"

namespace quant::passes {
namespace {

// A Conv or Gemm whose weight (and bias) are float32 constants read by it
// alone, held in double while the pairs are equalized.
struct Layer {
  ir::Node* node = nullptr;
  bool gemm = false;
  bool trans_b = false;  // Gemm: W is [N, K] (else [K, N])
  int64_t group = 1;     // Conv
  Dims shape;
  std::vector<double> w, b;  // b empty: no bias

  int64_t out_channels() const { return gemm ? shape[trans_b ? 0 : 1] : shape[0]; }
  int64_t in_channels() const { return gemm ? shape[trans_b ? 1 : 0] : shape[1] * group; }
  int64_t taps() const {
    int64_t k = 1;
    for (size_t d = 2; d < shape.size(); ++d) k *= shape[d];
    return k;
  }

  // Calls f(w[k]) for every weight of output channel c.
  template <class F>
  void for_output_channel(int64_t c, F f) {
    if (!gemm) {
      const int64_t inner = shape[1] * taps();
      for (int64_t k = c * inner; k < (c + 1) * inner; ++k) f(w[static_cast<size_t>(k)]);
    } else if (trans_b) {
      for (int64_t k = 0; k < shape[1]; ++k) f(w[static_cast<size_t>(c * shape[1] + k)]);
    } else {
      for (int64_t k = 0; k < shape[0]; ++k) f(w[static_cast<size_t>(k * shape[1] + c)]);
    }
  }

  // Calls f(w[k]) for every weight that reads input channel i: with groups
  // (depthwise included), input i belongs to group i / (C_in / group) and is
  // that group's input i % (C_in / group) for each of its output channels.
  template <class F>
  void for_input_channel(int64_t i, F f) {
    if (!gemm) {
      const int64_t cin = shape[1], cout = shape[0] / group, k = taps();
      const int64_t g = i / cin, j = i % cin;
      for (int64_t o = g * cout; o < (g + 1) * cout; ++o)
        for (int64_t t = 0; t < k; ++t) f(w[static_cast<size_t>((o * cin + j) * k + t)]);
    } else if (trans_b) {
      for (int64_t n = 0; n < shape[0]; ++n) f(w[static_cast<size_t>(n * shape[1] + i)]);
    } else {
      for (int64_t n = 0; n < shape[1]; ++n) f(w[static_cast<size_t>(i * shape[1] + n)]);
    }
  }
};

// The node as a Layer, or why it is not one.
std::optional<Layer> as_layer(const ir::Graph& g, ir::Node* n, std::string& why) {
  if (!n->domain.empty() || (n->op_type != "Conv" && n->op_type != "Gemm")) return std::nullopt;
  Layer l;
  l.node = n;
  l.gemm = n->op_type == "Gemm";
  const ir::Value* wv = n->input(1);
  const Tensor* w = ir::constant_data(wv);
  if (!w || !wv->constant || w->dtype() != DType::Float32 || g.consumers(wv).size() != 1) {
    why = "its weight is not a float constant of its own";
    return std::nullopt;
  }
  if (l.gemm) {
    // Y = alpha A B' + beta C: equalization scales B and C, so alpha and beta stay 1.
    if (w->rank() != 2 || n->attr_float("alpha", 1) != 1.0f || n->attr_float("beta", 1) != 1.0f) {
      why = "Gemm with alpha or beta other than 1";
      return std::nullopt;
    }
    l.trans_b = n->attr_int("transB", 0) != 0;
  } else {
    if (w->rank() < 3) {
      why = "Conv weight of rank < 3";
      return std::nullopt;
    }
    l.group = n->attr_int("group", 1);
    if (l.group < 1 || w->dim(0) % l.group != 0) {
      why = "Conv group does not divide its output channels";
      return std::nullopt;
    }
  }
  l.shape = w->shape();
  l.w.assign(w->data<float>(), w->data<float>() + w->size());
  const ir::Value* bv = n->input(2);
  if (bv) {
    const Tensor* b = ir::constant_data(bv);
    if (!b || !bv->constant || b->dtype() != DType::Float32 || b->size() != l.out_channels() || g.consumers(bv).size() != 1) {
      why = "its bias is not a float constant of its own with one value per output channel";
      return std::nullopt;
    }
    l.b.assign(b->data<float>(), b->data<float>() + b->size());
  }
  return l;
}

void store(const Layer& l) {
  Tensor* w = l.node->input(1)->constant.get();
  for (size_t k = 0; k < l.w.size(); ++k) w->data<float>()[k] = static_cast<float>(l.w[k]);
  if (!l.b.empty()) {
    Tensor* b = l.node->input(2)->constant.get();
    for (size_t k = 0; k < l.b.size(); ++k) b->data<float>()[k] = static_cast<float>(l.b[k]);
  }
}

struct Pair {
  size_t first, second;  // indices into the layers
  ir::Node* act = nullptr;
};

bool unbounded_low(float lo) { return lo == 0.0f || lo == std::numeric_limits<float>::lowest() || lo == -std::numeric_limits<float>::infinity(); }
bool unbounded_high(float hi) { return hi == std::numeric_limits<float>::max() || hi == std::numeric_limits<float>::infinity(); }

}  // namespace

Expected<EqualizeReport> equalize(ir::Graph& g, const EqualizeOptions& options) {
  EqualizeReport report;
  QT_ASSIGN_OR_RETURN(auto order, g.topological_order());
  std::vector<Layer> layers;
  std::map<const ir::Node*, size_t> index;
  auto layer_of = [&](ir::Node* n, std::string& why) -> std::optional<size_t> {
    if (auto it = index.find(n); it != index.end()) return it->second;
    auto l = as_layer(g, n, why);
    if (!l) return std::nullopt;
    layers.push_back(std::move(*l));
    index[n] = layers.size() - 1;
    return layers.size() - 1;
  };
  // The single reader of v, when v is no graph output.
  auto only_reader = [&](const ir::Value* v) -> ir::Node* {
    if (!v || g.is_graph_output(v)) return nullptr;
    auto users = g.consumers(v);
    return users.size() == 1 ? users[0] : nullptr;
  };
  const auto clamps = profile::find_clamped_twins(g);
  std::vector<Pair> pairs;
  std::vector<ir::Node*> relu6;  // Clips to replace by Relu
  for (ir::Node* n1 : order) {
    if (!n1->domain.empty() || (n1->op_type != "Conv" && n1->op_type != "Gemm") || n1->outputs.empty()) continue;
    ir::Value* y1 = n1->outputs[0];
    ir::Node* next = only_reader(y1);
    if (!next || !next->domain.empty()) continue;
    ir::Node* act = nullptr;
    ir::Value* into = y1;
    if (next->op_type == "Relu" || next->op_type == "LeakyRelu" || next->op_type == "Clip") {
      act = next;
      into = act->outputs.empty() ? nullptr : act->outputs[0];
      next = only_reader(into);
      if (!next || !next->domain.empty() || next->op_type != n1->op_type) continue;
    } else if (next->op_type != n1->op_type) {
      continue;
    }
    if (next->input(0) != into || (next->op_type == "Gemm" && next->attr_int("transA", 0) != 0)) continue;
    bool replace = false;
    const std::string what = "'" + n1->name + "' -> " + (act ? act->op_type + " -> " : "") + "'" + next->name + "'";
    if (act && act->op_type == "Clip") {
      auto c = clamps.find(y1);
      if (c == clamps.end() || !unbounded_low(c->second.lo)) {
        report.notes.push_back("equalize: skipped " + what + ": its Clip has a lower bound other than 0 or non-constant bounds");
        continue;
      }
      if (!unbounded_high(c->second.hi)) {
        if (!options.relu6_to_relu || c->second.lo != 0.0f) {
          report.notes.push_back("equalize: skipped " + what + ": Clip's upper bound " + std::to_string(c->second.hi) +
                                 " would have to change per channel (--equalize-relu6 replaces it by Relu)");
          continue;
        }
        replace = true;
      }
    }
    std::string why;
    auto a = layer_of(n1, why);
    std::optional<size_t> b;
    if (a) b = layer_of(next, why);
    if (!a || !b) {
      report.notes.push_back("equalize: skipped " + what + ": " + why);
      continue;
    }
    if (layers[*a].out_channels() != layers[*b].in_channels()) {
      report.notes.push_back("equalize: skipped " + what + ": " + std::to_string(layers[*a].out_channels()) +
                             " output channels feed " + std::to_string(layers[*b].in_channels()) + " input channels");
      continue;
    }
    pairs.push_back({*a, *b, act});
    if (replace) relu6.push_back(act);
    report.pairs.push_back({n1->name, next->name, act ? act->op_type : ""});
    report.changed_tensors.insert(y1->name());
    if (act) report.changed_tensors.insert(into->name());
  }
  for (ir::Node* clip : relu6) {
    report.notes.push_back("equalize: Clip '" + clip->name + "' replaced by Relu (--equalize-relu6): the float model changes where its input exceeds its upper bound");
    report.replaced_clips.push_back(clip->name);
    clip->op_type = "Relu";
    clip->inputs.resize(1);
    clip->attributes.clear();
  }
  // Sweeps over the pairs until every scale is 1 to the tolerance (Nagel et
  // al. 2019, section 4.1: "iterate until convergence" for chains).
  report.converged = pairs.empty();
  for (int it = 0; it < options.max_iterations && !pairs.empty(); ++it) {
    double worst = 0;
    for (const Pair& p : pairs) {
      Layer& l1 = layers[p.first];
      Layer& l2 = layers[p.second];
      for (int64_t i = 0; i < l1.out_channels(); ++i) {
        double r1 = 0, r2 = 0;
        l1.for_output_channel(i, [&](double& w) { r1 = std::max(r1, std::abs(w)); });
        l2.for_input_channel(i, [&](double& w) { r2 = std::max(r2, std::abs(w)); });
        // s_i = sqrt(r1_i r2_i) / r2_i (the paper's equation 11); a channel
        // that is all zero on either side keeps its scale.
        if (!(r1 > 0) || !(r2 > 0) || !std::isfinite(r1) || !std::isfinite(r2)) continue;
        const double s = std::sqrt(r1 * r2) / r2;
        worst = std::max(worst, std::abs(std::log(s)));
        l1.for_output_channel(i, [&](double& w) { w /= s; });
        if (!l1.b.empty()) l1.b[static_cast<size_t>(i)] /= s;
        l2.for_input_channel(i, [&](double& w) { w *= s; });
      }
    }
    report.iterations = it + 1;
    if (worst < options.tolerance) {
      report.converged = true;
      break;
    }
  }
  if (!report.converged)
    report.notes.push_back("equalize: scales still changing after " + std::to_string(report.iterations) + " sweeps");
  for (const Layer& l : layers) store(l);
  return report;
}

}  // namespace quant::passes
