#include "libquant/passes/bias_correction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "libquant/kernels/quantize.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/quant_points.h"

namespace quant::passes {
namespace {

bool is_layer(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul");
}

// A MatMul's bias: the constant float32 vector of N values an Add adds to
// its output (read by that Add alone), directly or through the Q/DQ pair
// insert_qdq puts between them; nullptr when there is none.
ir::Value* matmul_bias(const ir::Graph& g, const ir::Node& mm, int64_t n) {
  auto only = [&](const ir::Value* v) -> ir::Node* {
    auto users = v && !g.is_graph_output(v) ? g.consumers(v) : std::vector<ir::Node*>{};
    return users.size() == 1 ? users[0] : nullptr;
  };
  const ir::Value* y = mm.outputs.empty() ? nullptr : mm.outputs[0];
  ir::Node* add = only(y);
  if (is_quantize(add)) {
    ir::Node* dq = only(add->outputs.empty() ? nullptr : add->outputs[0]);
    if (!is_dequantize(dq) || dq->outputs.empty()) return nullptr;
    y = dq->outputs[0];
    add = only(y);
  }
  if (!add || !add->domain.empty() || add->op_type != "Add" || add->inputs.size() != 2) return nullptr;
  ir::Value* b = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
  const Tensor* t = b ? b->constant.get() : nullptr;
  if (!t || t->dtype() != DType::Float32 || t->size() != n || t->rank() < 1 || t->dim(t->rank() - 1) != n ||
      g.consumers(b).size() != 1)
    return nullptr;
  return b;
}

// The bias and output-channel count of a Conv/Gemm with weight w.
int64_t output_channels(const ir::Node& n, const Tensor& w) {
  if (n.op_type == "Conv") return w.dim(0);
  return n.attr_int("transB", 0) ? w.dim(0) : w.dim(1);
}

// x = (q - zero_point) * scale of a DequantizeLinear whose inputs are all
// constants (ONNX DequantizeLinear-13: per tensor, or 1-D scale along `axis`).
std::optional<Tensor> dequantized_constant(const ir::Node& dq) {
  const Tensor* q = ir::constant_data(dq.input(0));
  const Tensor* scale = ir::constant_data(dq.input(1));
  const Tensor* zp = dq.input(2) ? ir::constant_data(dq.input(2)) : nullptr;
  if (!q || !scale || scale->dtype() != DType::Float32 || (dq.input(2) && !zp) || (zp && zp->dtype() != q->dtype()))
    return std::nullopt;
  int64_t outer = 1, len = q->size(), inner = 1;
  const int64_t scales = scale->size();
  if (scales != 1) {
    int64_t axis = dq.attr_int("axis", 1);
    if (axis < 0) axis += q->rank();
    if (scale->rank() != 1 || axis < 0 || axis >= q->rank() || q->dim(axis) != scales) return std::nullopt;
    len = scales;
    for (int64_t d = 0; d < q->rank(); ++d) {
      if (d < axis) outer *= q->dim(d);
      if (d > axis) inner *= q->dim(d);
    }
  }
  Tensor y(DType::Float32, q->shape());
  auto run = [&](auto tag) {
    using Q = decltype(tag);
    kernels::dequantize_linear<Q>(q->data<Q>(), y.data<float>(), outer, len, inner, scale->data<float>(),
                                  zp ? zp->data<Q>() : nullptr, 0, scales);
  };
  switch (q->dtype()) {
    case DType::Int8: run(int8_t{}); break;
    case DType::UInt8: run(uint8_t{}); break;
    case DType::Int32: run(int32_t{}); break;
    default: return std::nullopt;
  }
  return y;
}

}  // namespace

InputMeanCollector::InputMeanCollector(const ir::Graph& g) {
  std::map<std::string, int> names;
  for (const auto& n : g.nodes()) names[n->name]++;
  for (const auto& n : g.nodes()) {
    const Tensor* w = ir::constant_data(n->input(1));
    if (!is_layer(*n) || n->name.empty() || names[n->name] != 1 || !n->input(0) || !w || w->dtype() != DType::Float32) continue;
    Reader r;
    r.node = n->name;
    r.gemm = n->op_type == "Gemm" || n->op_type == "MatMul";
    if (r.gemm) {
      if (w->rank() != 2) continue;
      r.trans_a = n->op_type == "Gemm" && n->attr_int("transA", 0) != 0;
    } else {
      const size_t nd = static_cast<size_t>(std::max<int64_t>(w->rank() - 2, 0));
      const std::string pad = n->attr_string("auto_pad", "NOTSET");
      if (nd < 1 || nd > 3 || (pad != "NOTSET" && pad != "VALID")) continue;
      r.geometry.kernel.assign(w->shape().begin() + 2, w->shape().end());
      r.geometry.strides = n->attr_ints("strides", std::vector<int64_t>(nd, 1));
      r.geometry.dilations = n->attr_ints("dilations", std::vector<int64_t>(nd, 1));
      r.geometry.pads = pad == "VALID" ? std::vector<int64_t>(2 * nd, 0) : n->attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
      if (n->attr_ints("kernel_shape", r.geometry.kernel) != r.geometry.kernel) continue;
    }
    readers_.emplace(n->input(0), std::move(r));
  }
}

void InputMeanCollector::observe(const ir::Value& value, const Tensor& tensor) {
  auto [lo, hi] = readers_.equal_range(&value);
  for (auto it = lo; it != hi; ++it) {
    const Reader& r = it->second;
    if (std::find(skipped_.begin(), skipped_.end(), r.node) != skipped_.end()) continue;
    calib::InputMeans& m = means_[r.node];
    const bool ok = r.gemm ? calib::add_gemm_input_sums(tensor, r.trans_a, m) : calib::add_conv_input_sums(tensor, r.geometry, m);
    if (!ok) {
      skipped_.push_back(r.node);
      means_.erase(r.node);
    }
  }
}

void add_missing_biases(ir::Graph& g, const std::map<std::string, calib::InputMeans>& layers) {
  std::vector<ir::Node*> todo;
  for (const auto& n : g.nodes())
    if (is_layer(*n) && n->op_type != "MatMul" && layers.count(n->name) && !n->input(2) && ir::constant_data(n->input(1)))
      todo.push_back(n.get());
  for (ir::Node* n : todo) {
    const Tensor& w = *ir::constant_data(n->input(1));
    Tensor zero(DType::Float32, {output_channels(*n, w)});
    std::fill(zero.data<float>(), zero.data<float>() + zero.size(), 0.0f);
    if (n->op_type == "Gemm" && n->attr_float("beta", 1) != 1.0f) n->attributes["beta"] = ir::Attribute::of_float(1.0f);
    n->inputs.resize(3, nullptr);
    n->inputs[2] = add_constant(g, n->name + "_bias", std::move(zero));
  }
}

std::map<std::string, Tensor> float_weights(const ir::Graph& g, const std::map<std::string, calib::InputMeans>& layers) {
  std::map<std::string, Tensor> out;
  for (const auto& n : g.nodes())
    if (is_layer(*n) && layers.count(n->name))
      if (const Tensor* w = ir::constant_data(n->input(1)); w && w->dtype() == DType::Float32) out.emplace(n->name, *w);
  return out;
}

Status correct_biases(ir::Graph& g, const std::map<std::string, Tensor>& weights,
                      const std::map<std::string, calib::InputMeans>& means, std::vector<std::string>& notes) {
  for (const auto& node : g.nodes()) {
    ir::Node* n = node.get();
    auto m = means.find(n->name);
    auto w = weights.find(n->name);
    if (!is_layer(*n) || m == means.end() || w == weights.end()) continue;
    const std::string who = "bias correction: " + n->describe();
    ir::Node* wdq = n->input(1) ? n->input(1)->producer : nullptr;
    if (!is_dequantize(wdq)) continue;  // left float (excluded, or not quantized)
    auto wq = dequantized_constant(*wdq);
    if (!wq || wq->shape() != w->second.shape()) {
      notes.push_back(who + " left: its quantized weight is not a constant of the float weight's shape");
      continue;
    }
    const bool matmul = n->op_type == "MatMul";
    const bool gemm = n->op_type == "Gemm" || matmul;
    if (n->op_type == "Gemm" && (n->attr_float("alpha", 1) != 1.0f || n->attr_float("beta", 1) != 1.0f)) {
      notes.push_back(who + " left: Gemm with alpha or beta other than 1");
      continue;
    }
    const int64_t group = gemm ? 1 : n->attr_int("group", 1);
    const bool trans_b = n->attr_int("transB", 0) != 0;
    const Tensor& wf = w->second;
    const int64_t k = gemm ? (trans_b ? wf.dim(1) : wf.dim(0)) : wf.dim(1) * group;
    if (m->second.shape.empty() || m->second.shape[0] != k ||
        (!gemm && static_cast<int64_t>(m->second.sum.size()) != k * (wf.size() / (wf.dim(0) * wf.dim(1))))) {
      notes.push_back(who + " left: its input sums do not fit its weight");
      continue;
    }
    const std::vector<double> shift = calib::expected_output_shift(wf, *wq, m->second, gemm, trans_b, group);
    const int64_t channels = static_cast<int64_t>(shift.size());
    ir::Value* bv = matmul ? matmul_bias(g, *n, channels) : n->input(2);
    ir::Node* bdq = bv ? bv->producer : nullptr;
    double largest = 0;
    for (double s : shift) largest = std::max(largest, std::abs(s));
    if (bv && bv->constant && bv->constant->dtype() == DType::Float32 && bv->constant->size() == channels) {
      // A float bias (the target adds it in float).
      Tensor b = *bv->constant;
      for (int64_t c = 0; c < channels; ++c) b.data<float>()[c] = static_cast<float>(b.data<float>()[c] - shift[static_cast<size_t>(c)]);
      *bv->constant = std::move(b);
    } else if (is_dequantize(bdq) && bdq->input(0) && bdq->input(0)->constant &&
               bdq->input(0)->constant->dtype() == DType::Int32 && bdq->input(0)->constant->size() == channels &&
               g.consumers(bdq->input(0)).size() == 1) {
      // An int32 bias at scale s_in * s_w[c]: the corrected value, rounded
      // half to even and saturated as insert_qdq quantizes biases.
      auto b = dequantized_constant(*bdq);
      const Tensor* scale = ir::constant_data(bdq->input(1));
      if (!b || !scale) {
        notes.push_back(who + " left: its int32 bias has no constant scale");
        continue;
      }
      Tensor q(DType::Int32, bdq->input(0)->constant->shape());
      constexpr double kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
      for (int64_t c = 0; c < channels; ++c) {
        const double s = scale->data<float>()[scale->size() == 1 ? 0 : c];
        double r = std::nearbyint((static_cast<double>(b->data<float>()[c]) - shift[static_cast<size_t>(c)]) / s);
        if (std::isnan(r)) r = 0;
        q.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(r, kMin, kMax));
      }
      *bdq->input(0)->constant = std::move(q);
    } else {
      notes.push_back(who + " left: no bias it could correct");
      continue;
    }
    notes.push_back(who + ": bias -= (W_q - W) E[x], largest |shift| " + std::to_string(largest));
  }
  return ir::verify(g);
}

}  // namespace quant::passes
