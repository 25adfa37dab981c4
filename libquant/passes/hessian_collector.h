// The graph side of GPTQ (qconvert --weight-rounding gptq; the maths is
// calib/gptq.h): during a run of the float graph over calibration data
// (an interp::Observer), sums x x^T over the input rows of every MatMul / Gemm
// with a constant 2-D float weight and a unique name, K x K per layer,
// streaming: no activation is kept.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libquant/calib/gptq.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

class HessianCollector {
 public:
  explicit HessianCollector(const ir::Graph& graph);
  void observe(const ir::Value& value, const Tensor& tensor);
  // Node name -> the sums of its input rows (nodes never observed are absent).
  const std::map<std::string, calib::Hessian>& hessians() const { return hessians_; }
  std::map<std::string, calib::Hessian> take() { return std::move(hessians_); }
  // Layers whose input did not match their weight (named once each).
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::multimap<const ir::Value*, std::pair<std::string, int64_t>> readers_;  // input -> (node, K)
  std::map<std::string, calib::Hessian> hessians_;
  std::vector<std::string> skipped_;
};

}  // namespace quant::passes
