#include "libquant/profile/collector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace quant::profile {
namespace {

// A Clip bound given as an input (opset >= 11): a constant float32 scalar,
// or absent (nullopt: no bound); `ok` false for anything else.
std::optional<float> bound_input(const ir::Node& node, size_t index, bool& ok) {
  const ir::Value* v = node.input(index);
  if (!v) return std::nullopt;
  const Tensor* t = ir::constant_data(v);
  if (!t || t->dtype() != DType::Float32 || t->size() != 1) {
    ok = false;
    return std::nullopt;
  }
  return t->data<float>()[0];
}

}  // namespace

std::map<const ir::Value*, ClampedTwin> find_clamped_twins(const ir::Graph& graph) {
  std::map<const ir::Value*, ClampedTwin> twins;
  const int64_t opset = graph.opset("");
  for (const auto& node : graph.nodes()) {
    if (!node->domain.empty() || (node->op_type != "Relu" && node->op_type != "Clip")) continue;
    const ir::Value* x = node->input(0);
    const ir::Value* y = node->outputs.empty() ? nullptr : node->outputs[0];
    if (!x || !y || ir::constant_data(x) || twins.count(x)) continue;
    // As the interpreter's Clip (interp/ops_unary.cpp): an absent bound is
    // the type's lowest / highest value.
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    if (node->op_type == "Relu") {
      lo = 0.0f;
      hi = std::numeric_limits<float>::infinity();
    } else if (opset < 11) {
      lo = node->attr_float("min", lo);
      hi = node->attr_float("max", hi);
    } else {
      bool ok = true;
      lo = bound_input(*node, 1, ok).value_or(lo);
      hi = bound_input(*node, 2, ok).value_or(hi);
      if (!ok) continue;
    }
    if (!(lo <= hi)) continue;
    twins[x] = ClampedTwin{y, lo, hi};
  }
  return twins;
}

Collector::Collector(const ir::Graph& graph, int bins, bool pair_clamped) : bins_(bins) {
  if (pair_clamped) twins_ = find_clamped_twins(graph);
  for (const auto& node : graph.nodes())
    if (node->domain.empty() && (node->op_type == "MatMul" || node->op_type == "Gemm") && node->input(0) &&
        !ir::constant_data(node->input(0)))
      channel_inputs_.insert(node->input(0));
}

void Collector::add_channel_absmax(TensorProfile& p, const Tensor& tensor) const {
  const int64_t k = tensor.shape().empty() ? 1 : tensor.shape().back();
  if (k <= 0) return;
  std::vector<float>& m = p.channel_absmax;
  if (m.empty()) m.assign(static_cast<size_t>(k), 0.0f);
  const float* x = tensor.data<float>();
  const int64_t rows = tensor.size() / k;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * k;
    for (int64_t j = 0; j < k; ++j) {
      const float a = std::fabs(row[j]);
      // Non-finite values stay out, as they stay out of min / max.
      if (a <= std::numeric_limits<float>::max() && a > m[static_cast<size_t>(j)]) m[static_cast<size_t>(j)] = a;
    }
  }
}

TensorProfile& Collector::profile_of(const std::string& name, const Tensor& tensor) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) it = tensors_.emplace(name, TensorProfile{"float32", tensor.shape(), Histogram(bins_)}).first;
  return it->second;
}

void Collector::observe(const ir::Value& value, const Tensor& tensor, const std::string& scope) {
  if (tensor.dtype() != DType::Float32 || ir::constant_data(&value)) return;
  if (!scope.empty()) {
    // A body's value: no Relu/Clip pairing (twins are the main graph's) and
    // no per-channel absmax (SmoothQuant rewrites the main graph only).
    profile_of(scope + value.name(), tensor).hist.add(tensor.data<float>(), tensor.size());
    return;
  }
  if (channel_inputs_.count(&value) && !channel_mismatch_.count(&value)) {
    TensorProfile& p = profile_of(value.name(), tensor);
    const int64_t k = tensor.shape().empty() ? 1 : tensor.shape().back();
    if (!p.channel_absmax.empty() && static_cast<int64_t>(p.channel_absmax.size()) != k) {
      p.channel_absmax.clear();
      channel_mismatch_.insert(&value);
    } else {
      add_channel_absmax(p, tensor);
    }
  }
  if (auto it = std::find(filled_.begin(), filled_.end(), &value); it != filled_.end()) {
    filled_.erase(it);
    return;
  }
  TensorProfile& p = profile_of(value.name(), tensor);
  const float* x = tensor.data<float>();
  if (auto twin = twins_.find(&value); twin != twins_.end()) {
    // y has x's shape (Relu and Clip are element-wise).
    TensorProfile& y = profile_of(twin->second.y->name(), tensor);
    if (p.hist.add_with_clamped(x, tensor.size(), twin->second.lo, twin->second.hi, y.hist)) {
      filled_.push_back(twin->second.y);
      return;
    }
  }
  p.hist.add(x, tensor.size());
}

}  // namespace quant::profile
