// qconvert --dynamic for LSTM: the node becomes ONNX Runtime's com.microsoft
// DynamicQuantizeLSTM (contrib op version 1, core/graph/contrib_ops/
// quantization_defs.cc; CPU kernel contrib_ops/cpu/quantization/
// dynamic_quantize_lstm.cc, ONNX Runtime 1.20), which quantizes X and Ht-1 at
// run time and multiplies them with 8-bit W and R.
//
// The kernel takes W as [D, input_size, 4*hidden] and R as [D, hidden,
// 4*hidden] (the LSTM weights transposed: MlasGemm's B is K x N), scales and
// zero points of shape [D, 4*hidden] (per column) or [D]; int8 weights need
// zero points 0, uint8 ones one zero point for the whole tensor
// (ZeroPointCheck). As ONNX Runtime's quantizer does (python/tools/
// quantization/operators/lstm.py): symmetric int8 per gate row of W[d] / R[d]
// (absmax / 127), then transposed. With uint8 weights (a target that stores
// them so, e.g. ort-x86) the same codes + 128 with zero point 128, which makes
// ONNX Runtime run its exact U8U8 kernel on CPUs without VNNI.
//
// GRU (and RNN) stay float: ONNX Runtime has no quantized GRU contrib op, and
// its standard GRU takes only float weights; a DequantizeLinear in front of a
// float GRU would store int8 but compute in float (no speed gained, the
// error of 8-bit weights kept), so the report says why instead.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libquant/ir/graph.h"
#include "libquant/passes/qdq.h"

namespace quant::passes {

// Makes (or reuses) a constant initializer named after `base`.
using ConstantMaker = std::function<ir::Value*(const std::string& base, Tensor t)>;

// Inserts DynamicQuantizeLSTM before LSTM node `n`, writing n's outputs (the
// caller removes n), and appends W's and R's decisions to `tensors`. Returns
// why not (empty on success; the graph is then unchanged).
std::string rewrite_lstm_dynamic(ir::Graph& g, ir::Node* n, bool uint8_weights, const ConstantMaker& constant,
                                 std::vector<TensorDecision>& tensors);

}  // namespace quant::passes
