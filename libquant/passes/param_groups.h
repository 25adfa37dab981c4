// Activations that must share one set of quantization parameters (DESIGN
// "Targets": shares_input_params, same_params). Two relations join tensors:
//  - an op that only moves data (Reshape, MaxPool, ...) keeps its input's
//    parameters on its output;
//  - an op whose inputs and output must all agree (TFLite's CONCATENATION,
//    XNNPACK's cat) puts every input and its output in one set.
// The joined sets are the groups; each takes one set of parameters, from the
// union of its members' ranges (a data-movement op's output range lies within
// its input's, so a chain of them keeps the input's parameters).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libquant/ir/graph.h"

namespace quant::passes {

struct ParamGroups {
  std::map<const ir::Value*, size_t> group_of;          // joined activation -> its group
  std::vector<std::vector<const ir::Value*>> members;   // per group, in the order joined
  std::vector<std::vector<const ir::Node*>> joined_by;  // per group, the ops that joined it
};

// Groups the activations in `chosen` joined by the `nodes` (quantized ops).
// Tensors outside `chosen` (graph outputs, weights) join nothing; a tensor
// no op joined is in no group.
ParamGroups group_activations(const std::vector<ir::Node*>& nodes, const std::set<const ir::Value*>& chosen,
                              const std::set<std::string>& shares_input_params, const std::set<std::string>& same_params);

}  // namespace quant::passes
