#include "libquant/passes/hessian_collector.h"

#include <algorithm>

namespace quant::passes {

HessianCollector::HessianCollector(const ir::Graph& g) {
  std::map<std::string, int> names;
  for (const auto& n : g.nodes()) names[n->name]++;
  for (const auto& n : g.nodes()) {
    const bool linear = n->domain.empty() && (n->op_type == "MatMul" || n->op_type == "Gemm");
    const Tensor* w = ir::constant_data(n->input(1));
    if (!linear || n->name.empty() || names[n->name] != 1 || !n->input(0) || !w || w->dtype() != DType::Float32 ||
        w->rank() != 2 || (n->op_type == "Gemm" && n->attr_int("transA", 0) != 0))
      continue;
    // K: MatMul's and Gemm's W [K, N], or [N, K] with Gemm's transB.
    const int64_t k = n->op_type == "Gemm" && n->attr_int("transB", 0) ? w->dim(1) : w->dim(0);
    readers_.emplace(n->input(0), std::make_pair(n->name, k));
  }
}

void HessianCollector::observe(const ir::Value& value, const Tensor& tensor) {
  auto [lo, hi] = readers_.equal_range(&value);
  for (auto it = lo; it != hi; ++it) {
    const auto& [node, k] = it->second;
    if (std::find(skipped_.begin(), skipped_.end(), node) != skipped_.end()) continue;
    calib::Hessian& h = hessians_[node];
    if (tensor.rank() < 1 || tensor.dim(tensor.rank() - 1) != k || !calib::add_hessian_rows(tensor, h)) {
      skipped_.push_back(node);
      hessians_.erase(node);
    }
  }
}

}  // namespace quant::passes
