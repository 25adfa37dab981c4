// Reading the quantization parameters an ONNX model states, for the target
// check (check.h): QuantizeLinear / DequantizeLinear (domain "" or
// com.microsoft) and the scale / zero point inputs of QOperator nodes
// (QLinearConv, QLinearMatMul, com.microsoft QGemm, QLinearAdd, ...), in
// whatever way the tool that wrote the model spelled them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libquant/core/dtype.h"
#include "libquant/ir/graph.h"

namespace quant::target {

// real = scale * (q - zero_point), per tensor (one scale) or per axis.
struct StatedParams {
  bool known = false;  // false: the scale is not a constant float32/float64 tensor
  DType type = DType::Undefined;
  std::vector<double> scale;       // the float32 values, widened
  std::vector<int64_t> zero_point;  // one per scale (0 where the model omits it)
  int64_t axis = 1;                 // per-axis: the axis, made non-negative when the rank is known
  bool per_tensor() const { return scale.size() == 1; }
};

bool is_quantize(const ir::Node* n);    // QuantizeLinear, domain "" or com.microsoft
bool is_dequantize(const ir::Node* n);  // DequantizeLinear, domain "" or com.microsoft

// The parameters in `scale` and `zero_point` (nullptr: omitted), for a
// quantized tensor of `type` and `rank` (-1: unknown) along `axis`.
StatedParams read_params(const ir::Value* scale, const ir::Value* zero_point, DType type, int64_t axis, int64_t rank);

// A QuantizeLinear's output parameters: the type is the zero point's, else
// opset 21's output_dtype, else the output's declared type, else uint8.
StatedParams quantize_params(const ir::Node& q);
// A DequantizeLinear's input parameters: the type is the input's.
StatedParams dequantize_params(const ir::Node& dq);

// Whether two sets are the same: type, zero points, and scales within a
// relative 1e-6 (tools that compute a scale in float64 and round it once may
// differ from those working in float32 by an ulp).
bool same_params(const StatedParams& a, const StatedParams& b);
bool close_scale(double a, double b);

// "uint8 scale 0.0235 zero point 128", "int8 per-axis 1 (16 scales) zero point 0"
std::string describe_params(const StatedParams& p);
// %.9g: a float32 printed so that it reads back to the same value.
std::string number(double v);

}  // namespace quant::target
