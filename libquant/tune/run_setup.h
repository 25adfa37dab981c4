// How a quantized model is run as a target computes it: the lowering options
// and Session options that a target (or none: ONNX Runtime-like, exact) and a
// requantization mode ask for. qrun uses it for the model it runs, the
// sensitivity pass and qconvert's accuracy search for every variant they
// evaluate, so all three compute the same bits.
#pragma once

#include <memory>
#include <optional>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/lower_qdq.h"
#include "libquant/target/target.h"

namespace quant::tune {

struct RunSetup {
  passes::LowerOptions lower;
  interp::SessionOptions session;  // for the quantized model
  interp::PlanOptions plan;
  bool lower_qdq = true;           // false: Q/DQ run in float (qrun --no-lower)
};

// `requant`: the target's requantization unless given (qrun --requant).
RunSetup run_setup(const target::TargetSpec* target, std::optional<interp::Requant> requant, int threads);

// A graph prepared to run: lowered per `setup` and its Session. The graph
// is owned here because the session points into it.
struct Prepared {
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<interp::Session> session;
};
Expected<Prepared> prepare(std::unique_ptr<ir::Graph> graph, const RunSetup& setup);

}  // namespace quant::tune
