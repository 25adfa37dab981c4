// QOperator emission: rewrites DQ -> op -> Q patterns of a QDQ graph into
// integer operators: QLinearConv and QLinearMatMul (ai.onnx, opset 10) and
// ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu;
// ops that only move data (MaxPool, Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze) run on the 8-bit tensor directly. A Relu or Clip between an op
// and its Q is dropped when the Q's saturation already clamps to its range.
// Patterns that do not match (Gemm, float islands) stay in QDQ form: ONNX
// Runtime runs mixed graphs.
#pragma once

#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// Returns one line per rewritten node for the report.
Expected<std::vector<std::string>> emit_qoperator(ir::Graph& graph);

}  // namespace quant::passes
