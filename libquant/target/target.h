// Targets: the rules of the runtime and CPU that will run a quantized model
// (DESIGN "Targets"), read from JSON (targets/NAME.json, schema
// targets/target.schema.json). One TargetSpec says what a quantized model may
// contain (read by qconvert, mapped onto passes::QuantizeOptions) and how the
// target computes it (read by qrun, mapped onto interp::SessionOptions).
// Neither passes nor interp see the spec or its name: apps copy its fields.
//
// The built-in targets are the repository's targets/*.json, compiled into the
// library at build time, so an installed tool needs no data directory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libquant/calib/params.h"
#include "libquant/core/dtype.h"
#include "libquant/core/status.h"
#include "libquant/kernels/qdot_sat16.h"
#include "libquant/kernels/requant.h"

namespace quant::target {

// An op whose output has fixed quantization parameters (e.g. Sigmoid's
// [0, 1) at scale 1/256 on integer-only backends).
struct FixedParams {
  float scale = 1;
  int32_t zero_point = 0;
};

struct TargetSpec {
  std::string name;
  std::string description;
  std::string source;  // "built-in" or the file it was read from

  // What a quantized model may contain ("quantize").
  std::string format = "qdq";  // "qdq" or "qoperator"
  DType activations = DType::UInt8;  // uint8, int8, uint16 or int16
  // The wider type a layer's activations may take when qconvert's accuracy
  // search moves it to a higher precision (mixed 8/16-bit activations, same
  // schema); Undefined: the target runs no such mix, moved layers go float.
  DType mixed_activations = DType::Undefined;
  calib::Schema schema = calib::Schema::Asymmetric;
  DType weights = DType::Int8;
  DType depthwise_weights = DType::Undefined;  // depthwise Conv weights; Undefined: `weights`
  int32_t weight_max = 127;  // symmetric weights in [-weight_max, weight_max] (uint8: around 128)
  bool per_channel = true;
  std::map<std::string, bool> per_channel_by_op;  // op type -> per channel (true) or per tensor
  // Int32, or Int64 (TFLite 16x8): ONNX's DequantizeLinear has no int64
  // input (opset 21, T1), so an int64 target's bias is stored as int32 when
  // every value fits and stays float otherwise; the target widens it.
  // Float32: the bias stays float (TensorRT's explicit quantization).
  DType bias = DType::Int32;
  std::vector<std::string> ops;                  // op types quantized; empty: qconvert's default set
  std::vector<std::string> shares_input_params;  // output keeps its input's parameters
  // Ops whose inputs and output all take one set of parameters, chosen from
  // the union of their ranges (TFLite's CONCATENATION, XNNPACK's cat).
  std::vector<std::string> same_params;
  std::map<std::string, FixedParams> fixed_output_params;
  // Where Q/DQ pairs go: "all" (the float inputs and outputs of every
  // quantized op) or "inputs" (only what quantized ops read: TensorRT's
  // explicit quantization, whose fusions quantize an op's output themselves).
  std::string placement = "all";
  // A MatMul whose two inputs are both activations quantizes B with this
  // type and schema (QNN HTP with 16-bit activations: int16 symmetric).
  // Undefined: B is an activation like any other.
  DType matmul_b_type = DType::Undefined;
  calib::Schema matmul_b_schema = calib::Schema::Symmetric;
  // Other ops' constant inputs quantized as weights, per tensor, with the
  // weights' type and range: op type -> input index (QNN HTP quantizes
  // LayerNormalization's scale, input 1).
  std::map<std::string, int> weight_inputs;
  // The weights of the first layers (Conv/Gemm/MatMul reading a graph input)
  // take [-m, m] instead (NNCF's overflow fix, mode first_layer); 0: none.
  int32_t first_layer_weight_max = 0;
  // The public source of each rule: the rule's path in the file
  // ("quantize.activations", "quantize.fixed_output_params.Tanh", ...) -> a
  // citation (spec page or source file of the backend).
  std::map<std::string, std::string> sources;
  // |w[2j]| + |w[2j+1]| <= bound over the int8 weights in ONNX Runtime's K
  // order (kernels/qdot_sat16.h): then no uint8 x int8 pair can leave int16
  // (255 * 128 = 32640). 0: no bound.
  int32_t weight_pair_bound = 0;

  // How the target computes ("compute").
  kernels::DotArithmetic dot = kernels::DotArithmetic::Exact;
  kernels::RequantMode requant = kernels::RequantMode::Float;
  // ONNX Runtime on x86 rewrites int8 Q/DQ activation pairs to uint8
  // (QDQS8ToU8Transformer) before fusing them into integer kernels.
  bool qdq_int8_activations_as_uint8 = false;
  // compute.softmax "onnxruntime-qlinear": 8-bit Softmax between Q/DQ runs
  // as ONNX Runtime's QLinearSoftmax (int8 output wraps at 128); "float"
  // (the default): float Softmax, quantized with saturation.
  bool onnxruntime_qlinear_softmax = false;
};

// Parses and validates a target's JSON text. `origin` names it in errors
// ("targets/ort-x86.json: quantize.weights.range: ...").
Expected<TargetSpec> parse_target(const std::string& json_text, const std::string& origin);

// A built-in target by name, or a file when `name_or_file` names one (a path
// with a '/' or ending in .json). Errors name the file and the field.
Expected<TargetSpec> load_target(const std::string& name_or_file);

// The built-in targets, sorted by name.
std::vector<TargetSpec> builtin_targets();

// The default target of qconvert (DESIGN "Targets").
inline constexpr const char* kDefaultConvertTarget = "ort-x86";

// The spec as JSON (qconvert --report, qconvert --list-targets --json).
std::string target_summary(const TargetSpec& t);

}  // namespace quant::target
