// The rules of each backend target (issue 21), as parsed from its built-in
// file: a change to a targets/*.json rule has to change this test too, and
// the source it cites (tests/target/test_target_sources.cpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "libquant/target/target.h"

using quant::DType;
using quant::calib::Schema;
using quant::kernels::DotArithmetic;
using quant::kernels::RequantMode;
using quant::target::TargetSpec;

namespace {

TargetSpec builtin(const std::string& name) {
  auto t = quant::target::load_target(name);
  INFO(name);
  REQUIRE(t);
  CHECK(t->source == "built-in");
  return *t;
}

bool has(const std::vector<std::string>& list, const std::string& op) {
  return std::find(list.begin(), list.end(), op) != list.end();
}

// Every op whose output shares its input's parameters, or whose inputs share
// one set, is also an op the target quantizes.
void check_lists_consistent(const TargetSpec& t) {
  INFO(t.name);
  for (const auto& op : t.shares_input_params) CHECK(has(t.ops, op));
  for (const auto& op : t.same_params) CHECK(has(t.ops, op));
  for (const auto& [op, fp] : t.fixed_output_params) CHECK(has(t.ops, op));
  for (const auto& [op, input] : t.weight_inputs) CHECK(has(t.ops, op));
}

void check_fixed(const TargetSpec& t, const std::string& op, float scale, int32_t zero_point) {
  INFO(t.name << " " << op);
  REQUIRE(t.fixed_output_params.count(op));
  CHECK(t.fixed_output_params.at(op).scale == scale);
  CHECK(t.fixed_output_params.at(op).zero_point == zero_point);
}

}  // namespace

TEST_CASE("xnnpack: ExecuTorch's symmetric per-channel config", "[target][builtin]") {
  const auto t = builtin("xnnpack");
  CHECK(t.activations == DType::Int8);
  CHECK(t.schema == Schema::Asymmetric);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(t.per_channel);
  CHECK(t.per_channel_by_op.empty());
  CHECK(t.bias == DType::Int32);
  CHECK(t.same_params == std::vector<std::string>{"Concat"});
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Concat", "GlobalAveragePool"})
    CHECK(has(t.ops, op));
  for (const char* op : {"Relu", "Clip", "MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Slice", "GlobalAveragePool"})
    CHECK(has(t.shares_input_params, op));
  // Neither annotated nor propagated by XNNPACKQuantizer.
  CHECK(!has(t.ops, "AveragePool"));
  CHECK(!has(t.ops, "Unsqueeze"));
  CHECK(t.fixed_output_params.empty());
  CHECK(t.placement == "all");
  CHECK(t.dot == DotArithmetic::Exact);
  CHECK(t.requant == RequantMode::Float);
  CHECK(!t.qdq_int8_activations_as_uint8);
  check_lists_consistent(t);
}

TEST_CASE("tflite-int8: the TFLite 8-bit quantization spec", "[target][builtin]") {
  const auto t = builtin("tflite-int8");
  CHECK(t.activations == DType::Int8);
  CHECK(t.schema == Schema::Asymmetric);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(t.per_channel);
  CHECK(t.per_channel_by_op.at("Gemm") == false);
  CHECK(t.per_channel_by_op.at("MatMul") == false);
  CHECK(t.bias == DType::Int32);
  check_fixed(t, "Sigmoid", 1.0f / 256, -128);
  check_fixed(t, "Softmax", 1.0f / 256, -128);
  check_fixed(t, "Tanh", 1.0f / 128, 0);
  check_fixed(t, "LogSoftmax", 16.0f / 256, 127);
  CHECK(t.fixed_output_params.size() == 4);
  for (const char* op : {"MaxPool", "AveragePool", "Reshape", "Flatten", "Resize", "Pad", "Gather", "Transpose", "Squeeze",
                         "Unsqueeze", "Slice", "SpaceToDepth", "DepthToSpace"})
    CHECK(has(t.shares_input_params, op));
  CHECK(t.same_params == std::vector<std::string>{"Concat", "Min", "Max"});
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Concat", "GlobalAveragePool", "Relu",
                         "Clip", "LeakyRelu", "HardSwish", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"})
    CHECK(has(t.ops, op));
  CHECK(t.placement == "all");
  CHECK(t.dot == DotArithmetic::Exact);
  CHECK(t.requant == RequantMode::FixedPoint);
  check_lists_consistent(t);
}

TEST_CASE("tflite-int16x8: TFLite's 16x8 mode", "[target][builtin]") {
  const auto t = builtin("tflite-int16x8");
  CHECK(t.activations == DType::Int16);
  CHECK(t.schema == Schema::Symmetric);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(t.per_channel);
  CHECK(t.per_channel_by_op.at("Gemm") == false);
  CHECK(t.per_channel_by_op.at("MatMul") == false);
  CHECK(t.bias == DType::Int64);
  check_fixed(t, "Sigmoid", 1.0f / 32768, 0);
  check_fixed(t, "Tanh", 1.0f / 32768, 0);
  check_fixed(t, "Softmax", 1.0f / 32768, 0);
  CHECK(t.fixed_output_params.size() == 3);
  // quantizable_int16 = false in TFLite's operator_property.cc.
  for (const char* op : {"HardSwish", "LogSoftmax", "PRelu", "SpaceToDepth", "DepthToSpace"}) CHECK(!has(t.ops, op));
  CHECK(t.same_params == std::vector<std::string>{"Concat", "Min", "Max"});
  CHECK(has(t.shares_input_params, "MaxPool"));
  CHECK(has(t.shares_input_params, "Reshape"));
  CHECK(t.requant == RequantMode::FixedPoint);
  check_lists_consistent(t);
}

TEST_CASE("qnn-htp-a8w8: QNN HTP with 8-bit activations", "[target][builtin]") {
  const auto t = builtin("qnn-htp-a8w8");
  CHECK(t.activations == DType::UInt8);
  CHECK(t.schema == Schema::Asymmetric);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(!t.per_channel);
  CHECK(t.bias == DType::Int32);
  check_fixed(t, "Sigmoid", 1.0f / 256, 0);
  CHECK(t.fixed_output_params.size() == 1);
  CHECK(t.same_params == std::vector<std::string>{"Concat"});
  CHECK(t.matmul_b_type == DType::Undefined);
  CHECK(t.weight_inputs.empty());
  for (const char* op : {"LayerNormalization", "Softmax", "Div", "Sub", "Gelu"}) CHECK(has(t.ops, op));
  for (const char* op : {"Reshape", "Transpose", "Gather", "Split"}) CHECK(has(t.shares_input_params, op));
  CHECK(!has(t.shares_input_params, "MaxPool"));
  check_lists_consistent(t);
}

TEST_CASE("qnn-htp-a16w8: QNN HTP with 16-bit activations", "[target][builtin]") {
  const auto t = builtin("qnn-htp-a16w8");
  CHECK(t.activations == DType::UInt16);
  CHECK(t.schema == Schema::Asymmetric);
  // ExecuTorch's 16a8w: uint8 per-tensor symmetric weights (zero point 128).
  CHECK(t.weights == DType::UInt8);
  CHECK(t.weight_max == 127);
  CHECK(!t.per_channel);
  CHECK(t.bias == DType::Int32);
  check_fixed(t, "Sigmoid", 1.0f / 65536, 0);
  check_fixed(t, "Tanh", 1.0f / 32768, 32768);
  CHECK(t.fixed_output_params.size() == 2);
  CHECK(t.matmul_b_type == DType::Int16);
  CHECK(t.matmul_b_schema == Schema::Symmetric);
  CHECK(t.weight_inputs.at("LayerNormalization") == 1);
  CHECK(t.weight_inputs.size() == 1);
  CHECK(t.same_params == std::vector<std::string>{"Concat"});
  check_lists_consistent(t);
}

TEST_CASE("tensorrt: explicit quantization with Q/DQ on inputs", "[target][builtin]") {
  const auto t = builtin("tensorrt");
  CHECK(t.activations == DType::Int8);
  CHECK(t.schema == Schema::Symmetric);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(t.per_channel);
  CHECK(t.placement == "inputs");
  CHECK(t.bias == DType::Float32);
  CHECK(t.ops == std::vector<std::string>{"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "AveragePool", "GlobalAveragePool"});
  CHECK(t.shares_input_params.empty());
  CHECK(t.same_params.empty());
  CHECK(t.fixed_output_params.empty());
  check_lists_consistent(t);
}

TEST_CASE("openvino-cpu: NNCF's CPU defaults", "[target][builtin]") {
  const auto t = builtin("openvino-cpu");
  CHECK(t.activations == DType::Int8);
  CHECK(t.schema == Schema::SymmetricUInt8);
  CHECK(t.weights == DType::Int8);
  CHECK(t.weight_max == 127);
  CHECK(t.per_channel);
  CHECK(t.first_layer_weight_max == 63);
  CHECK(t.placement == "inputs");
  CHECK(t.same_params == std::vector<std::string>{"Concat"});
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Concat", "AveragePool", "GlobalAveragePool"})
    CHECK(has(t.ops, op));
  // Quantization-agnostic on NNCF's CPU setup: no quantizer of their own.
  for (const char* op : {"MaxPool", "Reshape", "Transpose", "Relu"}) CHECK(!has(t.ops, op));
  CHECK(has(t.shares_input_params, "MaxPool"));
  CHECK(t.fixed_output_params.empty());
  // Shares are about what a quantizer propagates through, not ops quantized.
  for (const auto& op : t.same_params) CHECK(has(t.ops, op));
}

TEST_CASE("ethos-u and ethos-u-a16w8: ExecuTorch's Arm quantizer", "[target][builtin]") {
  const auto t8 = builtin("ethos-u");
  CHECK(t8.activations == DType::Int8);
  CHECK(t8.schema == Schema::Asymmetric);
  const auto t16 = builtin("ethos-u-a16w8");
  CHECK(t16.activations == DType::Int16);
  CHECK(t16.schema == Schema::Symmetric);
  for (const auto* t : {&t8, &t16}) {
    INFO(t->name);
    CHECK(t->weights == DType::Int8);
    CHECK(t->weight_max == 127);
    CHECK(t->per_channel);
    CHECK(t->bias == DType::Int32);
    CHECK(t->same_params == std::vector<std::string>{"Concat"});
    CHECK(t->requant == RequantMode::FixedPoint);
    CHECK(t->fixed_output_params.empty());
    for (const char* op : {"AveragePool", "MaxPool", "Relu", "Clip", "Reshape", "Resize", "ReduceMean"})
      CHECK(has(t->shares_input_params, op));
    check_lists_consistent(*t);
  }
  CHECK(t8.ops == t16.ops);
  CHECK(t8.shares_input_params == t16.shares_input_params);
}
