// The quantization points of a QDQ model and the layers that own them, for
// per-layer sensitivity (qrun --sensitivity): which Q/DQ pairs and weight DQs
// belong to which quantized node, and a rewrite that makes a chosen set of
// layers float again while every other layer stays quantized.
//
// A layer is a default-domain node, other than Q/DQ, that reads a
// DequantizeLinear output: a quantized node. It owns
//  - its dequantized constants: each input produced by a DequantizeLinear of
//    a constant (weights, bias), as the edge (input index, DQ);
//  - the activation QuantizeLinear nodes that quantize its outputs, directly
//    or through a single-reader Relu/Clip (a fused activation), or through a
//    DQ -> Q requantization pair after them;
//  - the QuantizeLinear of a graph input, when it is the first layer (in
//    execution order) to read it.
// Q/DQ nodes owned by no layer (after a float op) stay as they are.
//
// Making a layer float: each activation Q it owns is bypassed (every reader of
// a DequantizeLinear of it reads the Q's float input instead), and each
// dequantized constant edge reads the float tensor `float_constant` gives for
// (node, input index) - the float model's, found by node name - or keeps its
// DequantizeLinear when there is none (FloatResult::kept_constants counts
// those). Q/DQ nodes left without readers are removed.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

struct QuantLayer {
  ir::Node* node = nullptr;
  std::vector<ir::Node*> activation_qs;                      // activation QuantizeLinear nodes it owns
  std::vector<std::pair<size_t, ir::Node*>> constant_dqs;    // (input index, constant DequantizeLinear)
};

// QuantizeLinear / DequantizeLinear of the default domain or com.microsoft
// (the 16-bit forms before opset 21).
bool is_quantize(const ir::Node* n);
bool is_dequantize(const ir::Node* n);

// Every layer of g, in execution order.
Expected<std::vector<QuantLayer>> find_quant_layers(const ir::Graph& g);

// The float tensor for input `input` of a layer node, or nullptr.
using FloatConstant = std::function<const Tensor*(const ir::Node& node, size_t input)>;

struct FloatResult {
  int bypassed_qs = 0;
  int float_constants = 0;
  int kept_constants = 0;  // dequantized constants without a float tensor: left quantized
};

// Makes layers[i] float for every i in `which` (indices into `layers`, which
// must come from find_quant_layers(g)).
FloatResult make_layers_float(ir::Graph& g, const std::vector<QuantLayer>& layers, const std::set<size_t>& which,
                              const FloatConstant& float_constant);

// float_constant for a float twin of the model (the model qconvert
// quantized): the constant feeding the node of the same name at the same
// input index, when that node exists and the input is a constant.
FloatConstant constants_of(const ir::Graph& float_model);

}  // namespace quant::passes
