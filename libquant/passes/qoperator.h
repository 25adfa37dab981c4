// QOperator emission (qconvert --format qoperator): the lowering of
// passes/lower_qdq.h restricted to the operators ONNX Runtime's CPU provider
// runs (QLinearConv, QLinearMatMul, com.microsoft QLinear*, data movement on
// 8-bit tensors). Patterns that do not match (Gemm, float islands) stay in
// QDQ form: ONNX Runtime runs mixed graphs.
#pragma once

#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// Returns one line per rewritten node for the report.
Expected<std::vector<std::string>> emit_qoperator(ir::Graph& graph);

}  // namespace quant::passes
