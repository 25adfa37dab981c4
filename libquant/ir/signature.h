#pragma once

#include <string>

#include "libquant/ir/graph.h"

namespace quant::ir {

// SHA-256 over a canonical text of the graph's structure: every node's op
// type, domain and input/output names in order, plus the graph inputs and
// outputs. A profile records it so that qconvert can refuse a profile made
// from another model even when the file differs only in weights or metadata.
std::string graph_signature(const Graph& graph);

}  // namespace quant::ir
