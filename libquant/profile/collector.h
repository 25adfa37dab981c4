// The observer side of profiling: one histogram per float activation, filled
// value by value as the interpreter produces them (interp::Observer calls
// observe() right after each step), one run after another.
//
// A Relu or Clip (constant bounds) output y = clamp(x) is not scanned on its
// own: when x is observed, Histogram::add_with_clamped bins x's values once
// for both histograms, and y's observation, which comes later in the same
// run (the interpreter runs every node), is skipped. The histograms are those
// of observing every value separately, to the bit
// (tests/profile/test_collector.cpp); on activations whose bounds or lattices
// do not allow it, y is added when it comes, as any other. A run that fails
// leaves the histograms incomplete: its collector is to be dropped.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/profile.h"

namespace quant::profile {

// The Relu / Clip outputs of a graph that add_with_clamped can fill from their
// input: for each float activation x (not a constant), the first such node
// reading it, with the bounds the interpreter clamps to (Clip: its attributes
// before opset 11, its constant scalar inputs from 11 on, an absent bound the
// float lowest / highest; Relu: [0, +inf]).
struct ClampedTwin {
  const ir::Value* y = nullptr;
  float lo = 0, hi = 0;
};
std::map<const ir::Value*, ClampedTwin> find_clamped_twins(const ir::Graph& graph);

class Collector {
 public:
  // `pair_clamped` false: every activation scanned on its own (tests compare).
  Collector(const ir::Graph& graph, int bins, bool pair_clamped = true);

  // Float32 activations only; constants are skipped. The first input of a
  // MatMul or Gemm also gets its per-channel absmax over the last axis
  // (TensorProfile::channel_absmax). A value computed in a control-flow body
  // comes with its body's `scope` ("branches/then_branch/",
  // interp/body_observer.h) and is recorded as "<scope><name>".
  void observe(const ir::Value& value, const Tensor& tensor, const std::string& scope = "");
  std::map<std::string, TensorProfile>& tensors() { return tensors_; }

 private:
  TensorProfile& profile_of(const std::string& name, const Tensor& tensor);

  void add_channel_absmax(TensorProfile& p, const Tensor& tensor) const;

  int bins_;
  std::set<const ir::Value*> channel_inputs_;  // A of every MatMul / Gemm
  std::set<const ir::Value*> channel_mismatch_;  // last axis changed between runs: no per-channel record
  std::map<const ir::Value*, ClampedTwin> twins_;
  std::map<std::string, TensorProfile> tensors_;
  // Twins filled from their input in this run, whose own observations are
  // still to come (and are skipped).
  std::vector<const ir::Value*> filled_;
};

}  // namespace quant::profile
