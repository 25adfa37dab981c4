// Prepare once, run many: a Session owns one kernel per node, the execution
// order and each value's last use, all settled before the first sample.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
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
//
// Values folded at prepare time (see Session::create) are constants, not
// activations: the observer is NOT called for them, in any run. Neither is it
// called for values computed inside If/Loop/Scan bodies (nested sessions).
using Observer = std::function<void(const ir::Value& value, const Tensor& tensor)>;

// How a Session lays out its runs. Neither option changes any result (tests
// check outputs bit for bit with each on and off).
struct PlanOptions {
  // Activation buffers planned at prepare time (buffer_plan.h): values whose
  // lifetimes do not overlap share a buffer, and buffers are kept from one
  // run to the next, so a steady-state run neither allocates nor zero-fills
  // them. Graph outputs are moved out of the plan into the result.
  bool reuse_buffers = true;
  // Fusion: Conv -> Relu/Clip (constant bounds) becomes one Conv with the
  // clamp in its epilogue, Add -> Relu/Clip one Add, when the intermediate
  // value is read by nothing else and is no graph output. That value is then
  // never computed, so the observer never sees it: callers that observe every
  // value (qprofile, qrun --per-layer) leave this off.
  bool fuse = false;
};

class Session {
 public:
  // The graph must outlive the session.
  //
  // Constant folding: a node whose inputs (and outer-scope reads) are all
  // constant - initializers, Constant outputs, or outputs of nodes folded
  // before it - runs once here and its outputs are kept as constants, so that
  // exporter chains on static shapes (Shape -> Gather -> Concat -> Reshape)
  // cost nothing per sample. Results are the same as without folding; an
  // error such a node raises is reported here instead of at the first run.
  // Nodes whose result may differ between runs (Random*, Bernoulli,
  // Multinomial) are never folded. DequantizeLinear of a constant weight
  // folds too (a float weight computed once); a future integer lowering of
  // DQ -> op -> Q patterns must match them before folding.
  static Expected<std::unique_ptr<Session>> create(const ir::Graph& graph, const SessionOptions& options = {},
                                                   const PlanOptions& plan = {});

  const SessionOptions& options() const { return options_; }

  // Inputs in the order of graph.inputs; returns the graph outputs in order.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const Observer& observer = nullptr) const;
  // The same with borrowed inputs (If/Loop/Scan feed their bodies without
  // copying outer-scope tensors).
  Expected<std::vector<Tensor>> run(std::span<const Tensor* const> inputs, const Observer& observer = nullptr) const;

  // Steps left to run per sample after folding and fusion (tests check both with it).
  size_t step_count() const { return steps_.size(); }
  // The memory plan (empty with PlanOptions::reuse_buffers off): each value a
  // step produces and a later step releases, its lifetime in steps (producer
  // to last reader, both included) and its buffer. Tests check that values
  // sharing a buffer are never live at once.
  struct PlannedValue {
    const ir::Value* value;
    int first, last, buffer;
  };
  const std::vector<PlannedValue>& memory_plan() const { return planned_; }
  int buffer_count() const { return buffer_count_; }

  const ir::Graph& graph() const { return graph_; }

 private:
  Session(const ir::Graph& graph, const SessionOptions& options, const PlanOptions& plan)
      : graph_(graph), options_(options), plan_(plan) {}

  // The buffers of one run in flight; kept between runs (several runs may be
  // in flight at once, e.g. qprofile's sample threads: each takes its own).
  using Buffers = std::vector<Tensor>;
  Buffers take_buffers() const;
  void give_back(Buffers buffers) const;

  struct Step {
    const ir::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;          // slot per input, -1 for omitted
    std::vector<int> outputs;         // slot per output, -1 for omitted
    std::vector<int> release_after;   // slots whose last use is this step
  };

  const ir::Graph& graph_;
  SessionOptions options_;
  PlanOptions plan_;
  std::vector<Step> steps_;
  std::vector<const ir::Value*> slot_values_;
  std::vector<const Tensor*> constant_slots_;  // non-null for initializers and folded values
  std::deque<Tensor> folded_;                  // outputs of folded nodes (stable addresses)
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<int> buffer_of_slot_;  // -1: not planned (constants, graph inputs and outputs)
  std::vector<PlannedValue> planned_;
  int buffer_count_ = 0;
  mutable std::mutex buffers_mutex_;
  mutable std::vector<Buffers> idle_buffers_;
};

}  // namespace quant::interp
