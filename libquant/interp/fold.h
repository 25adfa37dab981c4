// Graph-level constant folding with the interpreter's kernels: a node whose
// inputs are all constants is run once and its outputs become initializers.
// qconvert runs it before quantizing so that weights computed by exporter
// chains (Identity of an initializer, Shape -> Gather -> Reshape on constant
// shapes...) are constants, as they were for qprofile, whose Session folds
// the same nodes at prepare time and so never observes them.
#pragma once

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::interp {

// Returns how many nodes were folded. DequantizeLinear nodes (quantized
// weights stay quantized), nodes with subgraphs and random ops stay.
Expected<int> fold_constants(ir::Graph& graph);

}  // namespace quant::interp
