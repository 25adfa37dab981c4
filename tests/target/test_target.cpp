#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <string>

#include "libquant/target/target.h"

using quant::kernels::DotArithmetic;
using quant::target::load_target;
using quant::target::parse_target;

namespace {

std::string error_of(const std::string& json) {
  auto t = parse_target(json, "my.json");
  REQUIRE(!t);
  return t.status().message();
}

}  // namespace

TEST_CASE("every built-in target parses and the ONNX Runtime x86 family is there", "[target]") {
  const auto all = quant::target::builtin_targets();
  std::vector<std::string> names;
  for (const auto& t : all) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"ethos-u", "ethos-u-a16w8", "openvino-cpu", "ort-arm64", "ort-x86", "ort-x86-avx2",
                                          "ort-x86-vnni", "qnn-htp-a16w8", "qnn-htp-a8w8", "tensorrt", "tflite-int16x8",
                                          "tflite-int8", "xnnpack"});
  for (const auto& t : all) {
    CHECK(t.source == "built-in");
    // ONNX Runtime's targets run 8-bit Softmax as its QLinearSoftmax; the others do not.
    CHECK(t.onnxruntime_qlinear_softmax == (t.name.rfind("ort-", 0) == 0));
    CHECK(!t.description.empty());
    // Each file is also readable by path, with the same fields.
    auto f = load_target(std::string(QTOOL_SOURCE_DIR) + "/targets/" + t.name + ".json");
    REQUIRE(f);
    CHECK(quant::target::target_summary(*f).size() > 0);
    CHECK(f->weight_pair_bound == t.weight_pair_bound);
    CHECK(f->dot == t.dot);
  }
  auto avx2 = load_target("ort-x86-avx2");
  REQUIRE(avx2);
  CHECK(avx2->dot == DotArithmetic::U8S8PairsSaturateInt16);
  CHECK(avx2->qdq_int8_activations_as_uint8);
  auto vnni = load_target("ort-x86-vnni");
  REQUIRE(vnni);
  CHECK(vnni->dot == DotArithmetic::Exact);
  CHECK(vnni->weight_pair_bound == 0);
  // The default keeps full accuracy on every x86 CPU: uint8 weights, which
  // ONNX Runtime multiplies exactly with or without VNNI (docs/targets.md).
  auto def = load_target(quant::target::kDefaultConvertTarget);
  REQUIRE(def);
  CHECK(def->weights == quant::DType::UInt8);
  CHECK(def->depthwise_weights == quant::DType::Int8);
  CHECK(def->weight_pair_bound == 0);
}

TEST_CASE("an unknown target name lists the built-in ones", "[target]") {
  auto t = load_target("ort-x68");
  REQUIRE(!t);
  CHECK(t.status().message().find("no built-in target") != std::string::npos);
  CHECK(t.status().message().find("ort-x86-avx2") != std::string::npos);
}

TEST_CASE("a bad target file is refused naming the file and the field", "[target]") {
  CHECK(error_of("{") .find("my.json: not valid JSON") == 0);
  CHECK(error_of("[]") == "my.json: the file: must be a JSON object");
  CHECK(error_of(R"({"description": "x"})") == "my.json: name: missing");
  CHECK(error_of(R"({"name": "t", "quantize": {"weights": {"rnage": [-1, 1]}}})") ==
        "my.json: quantize.weights.rnage: unknown field");
  CHECK(error_of(R"({"name": "t", "quantize": {"weights": {"range": [-128, 127]}}})").find("quantize.weights.range: must be symmetric") !=
        std::string::npos);
  CHECK(error_of(R"({"name": "t", "quantize": {"activations": {"type": "uint4"}}})") ==
        "my.json: quantize.activations.type: 'uint4' is not one of uint8, int8, uint16, int16");
  CHECK(error_of(R"({"name": "t", "compute": {"dot_product": "fast"}})").find("compute.dot_product") != std::string::npos);
  CHECK(error_of(R"({"name": "t", "quantize": {"weights": {"type": "uint8", "pair_bound": 128}}})") ==
        "my.json: quantize.weights.pair_bound: applies to int8 weights only");
  CHECK(error_of(R"({"name": "t", "quantize": {"fixed_output_params": {"Sigmoid": {"scale": 0}}}})")
            .find("quantize.fixed_output_params.Sigmoid") != std::string::npos);
  CHECK(error_of(R"({"name": "t", "compute": {"pair_order": "onnxruntime-mlas"}})") ==
        "my.json: compute.pair_order: applies only to a saturating dot_product");
}

TEST_CASE("a user-written target file is read with its fields", "[target]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("qtool_target_test_" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream out(path);
    out << R"({"name": "mine", "quantize": {"activations": {"type": "int8", "schema": "symmetric"},
             "weights": {"range": [-64, 64], "granularity_by_op": {"MatMul": "per-tensor"}},
             "fixed_output_params": {"Sigmoid": {"scale": 0.00390625, "zero_point": -128}}},
             "compute": {"requantization": "fixed-point"}})";
  }
  auto t = load_target(path);
  std::remove(path.c_str());
  REQUIRE(t);
  CHECK(t->name == "mine");
  CHECK(t->source == path);
  CHECK(t->activations == quant::DType::Int8);
  CHECK(t->weight_max == 64);
  CHECK(t->per_channel_by_op.at("MatMul") == false);
  CHECK(t->fixed_output_params.at("Sigmoid").zero_point == -128);
  CHECK(t->requant == quant::kernels::RequantMode::FixedPoint);
  CHECK(t->dot == DotArithmetic::Exact);
  auto missing = load_target("/nonexistent/target.json");
  REQUIRE(!missing);
  CHECK(missing.status().message().find("/nonexistent/target.json") != std::string::npos);
}

TEST_CASE("backend rule fields parse and bad ones name their field", "[target]") {
  auto t = parse_target(R"({"name": "t",
    "sources": {"quantize.activations": "spec page", "quantize.fixed_output_params.Tanh": "kernel file"},
    "quantize": {"activations": {"type": "uint16"}, "bias": "int64", "same_params": ["Concat"], "placement": "inputs",
                 "matmul_activation_b": {"type": "int16"},
                 "weights": {"first_layer_range": [-63, 63], "inputs_by_op": {"LayerNormalization": 1}},
                 "fixed_output_params": {"Tanh": {"scale": 0.0078125, "zero_point": 0}}}})",
                        "my.json");
  REQUIRE(t);
  CHECK(t->activations == quant::DType::UInt16);
  CHECK(t->bias == quant::DType::Int64);
  CHECK(t->same_params == std::vector<std::string>{"Concat"});
  CHECK(t->placement == "inputs");
  CHECK(t->matmul_b_type == quant::DType::Int16);
  CHECK(t->matmul_b_schema == quant::calib::Schema::Symmetric);
  CHECK(t->first_layer_weight_max == 63);
  CHECK(t->weight_inputs.at("LayerNormalization") == 1);
  CHECK(t->sources.at("quantize.fixed_output_params.Tanh") == "kernel file");
  CHECK(error_of(R"({"name": "t", "sources": {"quantize.weights.range": "x"}})") ==
        "my.json: sources.quantize.weights.range: cites a rule the file does not set");
  CHECK(error_of(R"({"name": "t", "sources": {"name": ""}})") == "my.json: sources.name: must be a citation (a non-empty string)");
  CHECK(error_of(R"({"name": "t", "quantize": {"matmul_activation_b": {"schema": "symmetric"}}})") ==
        "my.json: quantize.matmul_activation_b.type: missing");
  CHECK(error_of(R"({"name": "t", "quantize": {"weights": {"inputs_by_op": {"LayerNormalization": 0}}}})") ==
        "my.json: quantize.weights.inputs_by_op.LayerNormalization: must be an input index in [1, 8]");
  CHECK(error_of(R"({"name": "t", "quantize": {"placement": "outputs"}})").find("quantize.placement") != std::string::npos);
  CHECK(error_of(R"({"name": "t", "quantize": {"bias": "int16"}})").find("quantize.bias") != std::string::npos);
}

TEST_CASE("activations.mixed_type: 16-bit layers within an 8-bit model", "[target]") {
  auto t = parse_target(R"({"name": "t", "quantize": {"activations": {"type": "int8", "mixed_type": "int16"}},
                            "sources": {"quantize.activations.mixed_type": "a source"}})", "my.json");
  REQUIRE(t);
  CHECK(t->mixed_activations == quant::DType::Int16);
  CHECK(load_target("ort-x86")->mixed_activations == quant::DType::UInt16);
  CHECK(load_target("tflite-int8")->mixed_activations == quant::DType::Undefined);
  CHECK(error_of(R"({"name": "t", "quantize": {"activations": {"type": "uint16", "mixed_type": "uint16"}}})") ==
        "my.json: quantize.activations.mixed_type: a wider type for 8-bit activations; these are already uint16");
  CHECK(error_of(R"({"name": "t", "quantize": {"activations": {"mixed_type": "uint8"}}})") ==
        "my.json: quantize.activations.mixed_type: 'uint8' is not one of uint16, int16");
}
