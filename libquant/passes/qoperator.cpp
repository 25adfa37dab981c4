#include "libquant/passes/qoperator.h"

#include "libquant/passes/lower_qdq.h"

namespace quant::passes {

Expected<std::vector<std::string>> emit_qoperator(ir::Graph& graph) {
  QT_ASSIGN_OR_RETURN(Lowering lowered, lower_qdq(graph, LowerOptions{LowerTarget::OnnxRuntime, nullptr, false}));
  return lowered.notes;
}

}  // namespace quant::passes
