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
  // clamp in its epilogue, Add -> Relu/Clip one Add, and Conv -> Add
  // (-> Relu/Clip) one Conv adding the Add's other operand in its epilogue
  // (when that operand is computed before the Conv), wherever the
  // intermediate value is read by nothing else and is no graph output. That
  // value is then never computed, so the observer never sees it: callers that
  // observe every value (qprofile, qrun --per-layer) leave this off.
  bool fuse = false;
  // In place (with reuse_buffers): a step whose kernel may overwrite an input
  // (Kernel::may_overwrite_input: Relu, Clip and the other element-wise unary
  // ops, Add/Sub/Mul/Div) writes its output into that input's buffer when
  // the input is a planned value that no later step reads and has the
  // output's dtype and element count. The observer has seen the input
  // already (it is called right after each step), and the output's memory is
  // then the one still in the cache, without a second buffer.
  bool in_place = true;
  // Also with in_place: a Concat whose inputs are each other's neighbours in
  // its output (the axis' outer dims all 1: channels of one image) has each
  // input computed straight into its slice of the output's buffer, where
  // the input is a planned value of static shape that the Concat reads
  // last, and every slice starts on a 64-byte boundary; the Concat then
  // copies nothing (squeezenet's fire modules, shufflenet's units).
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
  // sharing a buffer are never live at once. Values whose size is not known
  // at prepare time (no shape in the model) get a buffer each until the
  // first run has completed; the plan is then made again, once, with the
  // sizes that run produced.
  // A value written in place over another (PlanOptions::in_place) shares its
  // buffer and `takes_over` names it: its lifetime starts at the step where
  // the other's ends.
  struct PlannedValue {
    const ir::Value* value;
    int first, last, buffer;
    const ir::Value* takes_over = nullptr;
    int64_t offset = 0;  // where in its buffer the value starts: a Concat's input in its slice
    int64_t bytes = -1;  // its bytes in the plan (-1: unknown)
  };
  std::vector<PlannedValue> memory_plan() const;
  int buffer_count() const;

  const ir::Graph& graph() const { return graph_; }

 private:
  Session(const ir::Graph& graph, const SessionOptions& options, const PlanOptions& plan)
      : graph_(graph), options_(options), plan_(plan) {}

  struct MemoryPlan {
    std::vector<int> buffer_of_slot;  // -1: not planned (constants, graph inputs and outputs)
    std::vector<int> in_place_input;  // per step: the input whose tensor output 0 takes over, or -1
    std::vector<int64_t> offset_of_slot;  // bytes into its buffer (a Concat's input in its slice), else 0
    // Per slot in a Concat's slice (its input, or a value written in place
    // into one): its planned bytes, all its view holds, so that a run whose
    // shapes outgrow the plan cannot spill into a neighbour's slice (the
    // value gets bytes of its own instead); else 0, no limit.
    std::vector<int64_t> slice_bytes;
    // Made before a run showed the values' sizes (at create): a run under
    // it reports their shapes too, for the Concats of models that declare none.
    bool provisional = false;
    std::vector<PlannedValue> planned;
    std::vector<int64_t> buffer_bytes;  // per buffer: the most bytes of its values
    int buffer_count = 0;
  };
  // Plans the buffers of the values of `lifetimes_` given each slot's bytes
  // (-1: unknown, or a value that never shares a buffer).
  // `shapes`: per slot the shape a run gave it (empty: not reported), or null.
  // `provisional`: made before any run (MemoryPlan::provisional).
  std::shared_ptr<const MemoryPlan> make_plan(const std::vector<int64_t>& bytes_of_slot,
                                              const std::vector<Dims>* shapes = nullptr, bool provisional = false) const;
  // Step i's data inputs (index, byte offset in its output's buffer) when
  // it is a Concat that takes them in place (PlanOptions::in_place), else empty.
  std::vector<std::pair<size_t, int64_t>> concat_slices(size_t i, const std::vector<int64_t>& bytes_of_slot,
                                                        const std::vector<Dims>* shapes, const std::vector<int>& group,
                                                        const std::vector<int64_t>& slice_bytes) const;

  // The buffers of one run in flight, under the plan they were made for;
  // kept between runs (several runs may be in flight at once, e.g. qprofile's
  // sample threads: each takes its own). Per buffer of `plan`, the tensor
  // whose bytes its values share: a step's output gets a view of them
  // (Tensor::view), so a kernel that makes a tensor of its own leaves them.
  struct Buffers {
    std::shared_ptr<const MemoryPlan> plan;
    std::vector<Tensor> storage;
    // Bytes released by values of sizes the plan does not know (the first
    // run of a model that declares no shapes), for the next such value.
    std::vector<Tensor> spare;
    // A view of buffer b from `offset` on, allocated first if it holds
    // fewer than the plan's bytes; for a buffer of unknown size, the
    // largest spare tensor's.
    Tensor view(size_t b, int64_t offset = 0, int64_t limit = 0);
    // A released value's tensor: becomes buffer b's bytes when it owns more;
    // for a buffer of unknown size, its bytes and t's go to `spare`.
    void keep(size_t b, Tensor t);
  };
  Buffers take_buffers() const;
  // `sizes`: per slot (dtype, element count) produced by a completed run, or
  // empty; the first such report replans with them.
  void give_back(Buffers buffers, const std::vector<std::pair<DType, int64_t>>& sizes,
                 const std::vector<Dims>& shapes) const;
  // The tensors of `old` (a run under the first plan) as buffers of the
  // current plan, each at least as large as the buffer it becomes.
  Buffers hand_over(Buffers old) const;

  struct Step {
    const ir::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;          // slot per input, -1 for omitted
    std::vector<int> outputs;         // slot per output, -1 for omitted
    std::vector<int> release_after;   // slots whose last use is this step
    std::vector<const MappedRegion*> release_mapped;  // SessionOptions::release_mapped_weights
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
  std::vector<std::pair<int, int>> lifetimes_;  // per slot: first and last step, -1 when not planned
  mutable std::mutex buffers_mutex_;            // guards the three below
  mutable std::shared_ptr<const MemoryPlan> memory_plan_;
  mutable bool replanned_ = false;
  mutable std::vector<Buffers> idle_buffers_;
};

}  // namespace quant::interp
