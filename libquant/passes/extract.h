// A part of a graph as a graph of its own, e.g. one quantized layer with its
// Q/DQ nodes, to run it alone on inputs taken from elsewhere (tune/).
#pragma once

#include <memory>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// A new graph holding copies of `nodes` (given in an order that runs:
// producers first). The values they read that no copied node produces
// become graph inputs, except constants, which are copied; `outputs` (values
// of g the copies produce) become its outputs. Names, types, shapes and the
// opset imports carry over. Subgraph attributes are copied as they are.
Expected<std::unique_ptr<ir::Graph>> extract_subgraph(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                                                      const std::vector<const ir::Value*>& outputs);

}  // namespace quant::passes
