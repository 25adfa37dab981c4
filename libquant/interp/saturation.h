// Saturated dot-product pairs per node, counted by the kernels that compute
// as a saturating target does (SessionOptions::dot, kernels/qdot_sat16.h), so
// that qrun --explain --target shows which layers a CPU class would break.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "libquant/kernels/qdot_sat16.h"

namespace quant::interp {

class SaturationLog {
 public:
  void add(const std::string& node, const kernels::SaturationStats& s) {
    std::lock_guard<std::mutex> lock(mu_);
    by_node_[node] += s;
  }
  std::map<std::string, kernels::SaturationStats> by_node() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_node_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, kernels::SaturationStats> by_node_;
};

}  // namespace quant::interp
