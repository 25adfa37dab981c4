// Lowering of QDQ graphs to integer operators: DequantizeLinear -> op ->
// QuantizeLinear patterns become one integer operator reading and writing the
// 8-bit tensors, as ONNX Runtime's QDQ fusions do. One pass serves two users:
//
//  - qconvert --format qoperator (LowerTarget::OnnxRuntime): only operators
//    ONNX Runtime's CPU provider runs: ai.onnx QLinearConv and QLinearMatMul
//    (opset 10), com.microsoft QLinearAdd, QLinearMul, QLinearAveragePool,
//    QLinearGlobalAveragePool, QLinearConcat, QLinearSigmoid,
//    QLinearLeakyRelu, and data-movement ops (MaxPool, Reshape, Flatten,
//    Transpose, Squeeze, Unsqueeze) run on the 8-bit tensor when their input
//    and output share parameters. A Relu/Clip between an op and its Q is
//    dropped when the Q's saturation already clamps to its range: when its
//    bounds quantize to the type's limits or beyond (Q(lo) <= qmin,
//    Q(hi) >= qmax), so that clip(Q(x), Q(lo), Q(hi)) = Q(x) for every x.
//  - qrun (LowerTarget::Interpreter), at prepare time, before
//    Session::create: the same, plus
//      * com.microsoft QGemm for Gemm (also with a float output, as ONNX
//        Runtime fuses DQ -> Gemm at the end of a model),
//      * Relu/Clip that saturation does not imply: an integer Clip on the
//        8-bit output, exact since Q(clip(x, a, b)) = clip(Q(x), Q(a), Q(b))
//        for the monotone Q (ONNX Clip takes 8-bit types from opset 12), or,
//        after a Conv / MatMul, folded into its output clamp
//        (LowerOptions::fold_activations),
//      * unary ops (Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu, Relu...) as
//        ai.qtool QLinearLookup: a 2^bits-entry table computed at prepare
//        time by running the float op on every dequantized input value and
//        quantizing (Glow's approach; 8- and 16-bit),
//      * data-movement ops (also Slice, Gather, Resize in nearest mode, ...)
//        on 8- and 16-bit data; when input and output parameters differ an
//        identity QLinearLookup requantizes, exact because the table is
//        monotone and these ops only select values.
//    Everything else stays a float island (DQ -> float op -> Q) with the
//    reason recorded in Lowering::float_reasons.
//
// Names stay traceable (DESIGN "Output models"): a lowered op writes the
// integer tensor its QuantizeLinear wrote, and Lowering::quantized pairs each
// integer tensor with the float tensor it stands for.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

enum class LowerTarget { OnnxRuntime, Interpreter };

struct LowerOptions {
  LowerTarget target = LowerTarget::Interpreter;
  // Whether the runtime has a kernel for (domain, op_type); a pattern whose
  // integer op it lacks stays a float island saying so. The pass cannot ask
  // the interpreter itself (passes do not depend on interp/): qrun passes
  // interp::find_kernel_factory. Null: every op is available.
  std::function<bool(const std::string& domain, const std::string& op_type)> has_kernel;
  // Interpreter: a Relu/Clip that saturation does not imply, after a Conv or
  // MatMul, runs inside the QLinearConv / QLinearMatMul as a narrower output
  // clamp (attributes activation_min / activation_max, the Clip's bounds
  // quantized) instead of as an integer Clip after it: the same bits, one
  // pass less. The pre-activation integer tensor then no longer exists, so
  // qrun --per-layer turns this off to pair every tensor with its twin.
  bool fold_activations = true;
  // DequantizeLinear -> Softmax -> QuantizeLinear becomes ONNX Runtime's
  // com.microsoft QLinearSoftmax (its QDQ optimizer does the same, and its
  // int8 output wraps where a probability rounds to 128). Off: the Softmax
  // stays float between Q/DQ, which saturates (TFLite and other backends).
  bool onnxruntime_softmax = true;
  // Interpreter: Conv, MatMul and Gemm between 16-bit activations (int16 or
  // uint16, the output of the input's type) and 8-bit weights become
  // QLinearConv / QLinearMatMul / QGemm with 16-bit tensors, which qrun runs
  // with int64 accumulators (kernels/qwide.h) as TFLite's 16x8 kernels do.
  // ONNX has no such operators, so only the interpreter takes them; qrun
  // turns this on under fixed-point requantization (the integer-only 16-bit
  // targets tflite-int16x8 and ethos-u-a16w8). Off, those ops stay float
  // between Q/DQ, which is how ONNX Runtime's CPU provider runs 16-bit QDQ.
  bool wide_products = false;
};

// An integer activation of a lowered (or QOperator) graph and the float
// tensor of the original model it quantizes: real = scale * (q - zero_point).
struct QuantizedTensor {
  std::string name;
  std::string float_name;
  DType qtype = DType::UInt8;
  float scale = 1;
  int32_t zero_point = 0;
};

struct Lowering {
  // One line per lowered node: "Conv node 'c1' -> QLinearConv (+ Relu implied by saturation)".
  std::vector<std::string> notes;
  // Nodes left computing in float, by node name, with the reason.
  std::map<std::string, std::string> float_reasons;
  // Lowered nodes by name: the integer op they became and what was fused.
  std::map<std::string, std::string> lowered;
};

Expected<Lowering> lower_qdq(ir::Graph& graph, const LowerOptions& options);

// Every integer activation of `graph` with per-tensor static parameters
// (outputs of QuantizeLinear, QLinear*, QGemm, QLinearLookup, and of
// data-movement ops on such tensors), in execution order. The float twin is
// the QuantizeLinear's input in a QDQ graph; after lowering (and in qconvert's
// QOperator models) it is the name without qconvert's "_quantized" suffix.
std::vector<QuantizedTensor> find_quantized_tensors(const ir::Graph& graph);

// Whether the Relu/Clip `act` leaves nothing to do after the QuantizeLinear
// `q` that reads its output: Q's range lies inside the activation's bounds,
// so the Q's saturation does what it does. ONNX Runtime drops such an
// activation (ReluQuantFusion, ClipQuantFusion) and fuses the op before it
// with the Q; with any other a Conv before it is not fused and runs in float.
// False where the bounds or Q's parameters are not constants.
bool activation_implied_by(const ir::Node& act, const ir::Node& q);

// Ops that only move or select values: on quantized data they keep the
// parameters (DESIGN "Numerics", shape-only ops; MaxPool and nearest Resize
// only select values, which commutes with the monotone quantization).
bool moves_data_only(const ir::Node& node);

}  // namespace quant::passes
