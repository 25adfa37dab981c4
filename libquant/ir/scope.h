// Names of control-flow bodies (If branches, Loop and Scan bodies), shared by
// the profile (a value computed in a body is "<scope>/<value>") and the passes
// that rewrite bodies (passes/subgraphs.h), so that the two agree.
#pragma once

#include <string>

#include "libquant/ir/graph.h"

namespace quant::ir {

// "<node name>/<attribute>", e.g. "branches/then_branch"; an unnamed node is
// named by its op type and first output ("If@y", an output name is unique in
// its graph); an attribute holding several graphs adds ".<i>". A nested body's
// scope is its parent's, '/', its own.
inline std::string body_scope(const std::string& parent_scope, const Node& node, const std::string& attribute) {
  std::string name = node.name;
  if (name.empty()) name = node.op_type + "@" + (!node.outputs.empty() && node.outputs[0] ? node.outputs[0]->name() : "");
  return (parent_scope.empty() ? "" : parent_scope + "/") + name + "/" + attribute;
}

}  // namespace quant::ir
