// Scores quantized variants of one float model on a fixed evaluation set:
// the inputs and the float model's outputs are computed once and kept in
// memory, then each variant is lowered and run as the target computes
// (tune/run_setup.h) and compared with them. What qrun --sensitivity and
// qconvert's accuracy search evaluate their candidates with.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "libquant/interp/compare.h"
#include "libquant/tune/run_setup.h"

namespace quant::tune {

struct Score {
  interp::ErrorStats error;      // over every float32 output
  int64_t agree = 0, rows = 0;   // top-1 of output 0 against the float model's
  int64_t correct = 0;           // top-1 of output 0 equal to the label (with labels)
  int64_t reference_correct = 0;
  bool has_labels = false;
  double agreement() const { return rows ? static_cast<double>(agree) / static_cast<double>(rows) : 0.0; }
  double accuracy_pct() const { return rows ? 100.0 * static_cast<double>(correct) / static_cast<double>(rows) : 0.0; }
  double reference_accuracy_pct() const {
    return rows ? 100.0 * static_cast<double>(reference_correct) / static_cast<double>(rows) : 0.0;
  }
  double accuracy_drop_pp() const { return reference_accuracy_pct() - accuracy_pct(); }
};

class Evaluator {
 public:
  // `samples`: the inputs of each sample in graph-input order. `labels`
  // (may be empty): one per row of output 0, over the samples in order (a
  // longer list is used from its start).
  // `observer` (may be null) sees every value of the reference run of each
  // sample, with fusion off; `end_sample` (may be null) runs after each.
  static Expected<std::unique_ptr<Evaluator>> create(const ir::Graph& reference, std::vector<std::vector<Tensor>> samples,
                                                     std::vector<int64_t> labels, const RunSetup& setup,
                                                     const interp::Observer& observer = {},
                                                     const std::function<Status()>& end_sample = {});

  // Lowers and runs `quantized` on every sample.
  Expected<Score> evaluate(std::unique_ptr<ir::Graph> quantized) const;
  int64_t evaluations() const { return evaluations_; }
  size_t samples() const { return inputs_.size(); }

 private:
  std::vector<std::vector<Tensor>> inputs_, reference_;
  std::vector<int64_t> labels_;
  RunSetup setup_;
  mutable int64_t evaluations_ = 0;
};

}  // namespace quant::tune
