// Prepare once, run many: a Session owns one kernel per node, the execution
// order and each value's last use, all settled before the first sample.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/interp/kernel.h"
#include "libquant/ir/graph.h"

namespace quant::interp {

// Called with every value a run produces (graph inputs included), in
// execution order. qprofile fills histograms from it; qrun --reference pairs
// quantized tensors with their float twins.
using Observer = std::function<void(const ir::Value& value, const Tensor& tensor)>;

class Session {
 public:
  // The graph must outlive the session.
  static Expected<std::unique_ptr<Session>> create(const ir::Graph& graph);

  // Inputs in the order of graph.inputs; returns the graph outputs in order.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const Observer& observer = nullptr) const;

  const ir::Graph& graph() const { return graph_; }

 private:
  explicit Session(const ir::Graph& graph) : graph_(graph) {}

  struct Step {
    const ir::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;          // slot per input, -1 for omitted
    std::vector<int> outputs;         // slot per output, -1 for omitted
    std::vector<int> release_after;   // slots whose last use is this step
  };

  const ir::Graph& graph_;
  std::vector<Step> steps_;
  std::vector<const ir::Value*> slot_values_;
  std::vector<const Tensor*> constant_slots_;  // non-null for initializers
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
};

}  // namespace quant::interp
