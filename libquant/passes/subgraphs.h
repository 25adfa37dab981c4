// Control-flow bodies (If branches, Loop and Scan bodies) rewritten by the
// same passes as the main graph (DESIGN "Subgraphs").
#pragma once

#include <functional>
#include <string>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/qdq.h"

namespace quant::passes {

// A body's scope: "<node name>/<attribute>" (e.g. "If_0/then_branch"), nested
// bodies joined by '/'; an unnamed node is named by op type and index
// ("If#3"). `scope` of the main graph is "".
std::string body_scope(const std::string& parent_scope, const ir::Node& node, int node_index, const std::string& attribute);

// Runs `pass` on every body of `graph`'s control-flow nodes, innermost first,
// and writes each rewritten body back into its attribute. Outer-scope values
// a body reads keep their names; domains a body's rewrite adds (e.g.
// com.microsoft) are added to `graph`'s opset imports. The reports are
// appended to `report`, node names prefixed with the body's scope.
using BodyPass = std::function<Expected<QuantizeReport>(ir::Graph& body, const std::string& scope)>;
Status rewrite_bodies(ir::Graph& graph, const BodyPass& pass, QuantizeReport* report, const std::string& scope = "");

}  // namespace quant::passes
