// Control-flow bodies (If branches, Loop and Scan bodies) rewritten by the
// same passes as the main graph (DESIGN "Subgraphs").
#pragma once

#include <functional>
#include <string>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/lower_qdq.h"
#include "libquant/passes/qdq.h"
#include "libquant/profile/profile.h"

namespace quant::passes {

// Runs `pass` on every body of `graph`'s control-flow nodes (a node's bodies in
// attribute-name order, a nested body before the one holding it),
// and writes each rewritten body back into its attribute. Outer-scope values
// a body reads keep their names; domains a body's rewrite adds (e.g.
// com.microsoft) are added to `graph`'s opset imports. The reports are
// appended to `report`, node names prefixed with the body's scope
// (ir/scope.h, e.g. "branches/then_branch/lstm").
using BodyPass = std::function<Expected<QuantizeReport>(ir::Graph& body, const std::string& scope)>;
Status rewrite_bodies(ir::Graph& graph, const BodyPass& pass, QuantizeReport* report, const std::string& scope = "");

// The profile a body at `scope` is quantized from: the main graph's entries
// (the outer-scope values a body reads keep their names) with the body's own
// "<scope>/<name>" entries (qprofile, interp/body_observer.h) as "<name>".
// Values of an intermediate body read by a body nested in it are not found.
profile::Profile body_profile(const profile::Profile& profile, const std::string& scope);

// lower_qdq on the graph and on every body (qrun's integer kernels also run
// inside If/Loop/Scan): a body's entries in the result are named
// "<scope>/<node>", its notes start with "<scope>: " and are also added to
// `body_notes` if given (qrun --explain prints them).
Expected<Lowering> lower_qdq_with_bodies(ir::Graph& graph, const LowerOptions& options,
                                         std::vector<std::string>* body_notes = nullptr);

}  // namespace quant::passes
