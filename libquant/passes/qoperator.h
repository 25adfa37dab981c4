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

// After emit_qoperator with int8 activations, which gave every weight int8
// for ONNX Runtime's S8S8 QLinearConv / QLinearMatMul (exact on x86; it has no
// int8 x uint8 kernel): where ONNX Runtime multiplies the activation as
// uint8 anyway, its u8 x s8 kernels saturate on x86 without VNNI. That is a
// QLinearConv / QLinearMatMul reading a uint8 activation (the non-negative
// tensors of the symmetric-uint8 schema), and a Conv / MatMul / Gemm left in
// QDQ form (ONNX Runtime rewrites int8 Q/DQ activations to uint8 + 128).
// Each such node gets its int8 weight back as uint8 + 128 (zero point + 128):
// the same values, on the exact U8U8 kernels. Depthwise convolution weights
// stay int8 (multiplied in 16 bits), and so does a weight whose data or zero
// point another node also reads. Returns the weights changed.
std::vector<std::string> uint8_weights_where_u8s8(ir::Graph& graph);

}  // namespace quant::passes
