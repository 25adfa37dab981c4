// qconvert --check-target's rules (libquant/target/check.h): for each rule a
// small QDQ graph that breaks it, and the violation naming that rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libquant/target/check.h"
#include "tests/passes/qdq_graph.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::ir::Value;
using quant::target::check_model;
using quant::target::CheckResult;
using quant::target::TargetSpec;
using quant::testing::QdqGraph;

namespace {

// A target whose "quantize" section is `quantize` (JSON), the other fields defaulted.
TargetSpec target(const std::string& quantize) {
  auto t = quant::target::parse_target(R"({"name": "t", "quantize": )" + quantize + "}", "t.json");
  if (!t) FAIL(t.status().message());
  return *t;
}

// The rules of the base target below, with `extra` fields added.
TargetSpec base_target(const std::string& extra = "") {
  return target(R"({"activations": {"type": "uint8", "schema": "asymmetric"},
    "weights": {"type": "int8", "range": [-127, 127], "granularity": "per-channel"}, "bias": "int32",
    "ops": ["Conv", "Gemm", "MatMul", "Relu", "MaxPool", "Flatten", "Concat", "Sigmoid", "Add", "LayerNormalization"],
    "shares_input_params": ["MaxPool", "Flatten"])" + extra + "}");
}

std::vector<std::string> rules(const CheckResult& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations) out.push_back(v.rule);
  return out;
}

// The one violation of r; fails unless there is exactly one.
quant::target::Violation only(const CheckResult& r) {
  INFO(quant::target::check_json(r, "t", "m"));
  REQUIRE(r.violations.size() == 1);
  return r.violations[0];
}

Tensor quantized(DType t, quant::Dims shape, const std::vector<int32_t>& codes) {
  Tensor q(t, std::move(shape));
  for (size_t i = 0; i < codes.size(); ++i) {
    if (t == DType::Int8) q.data<int8_t>()[i] = static_cast<int8_t>(codes[i]);
    else if (t == DType::UInt8) q.data<uint8_t>()[i] = static_cast<uint8_t>(codes[i]);
    else q.data<int32_t>()[i] = codes[i];
  }
  return q;
}

// A constant integer tensor behind its DequantizeLinear, zero point `zp`
// for every channel (per axis when there are several scales).
Value* dequantized(QdqGraph& q, const std::string& name, Tensor codes, const std::vector<float>& scales, int32_t zp, int64_t axis = 0) {
  const auto n = static_cast<int64_t>(scales.size());
  const DType t = codes.dtype();
  Value* qv = quant::passes::add_constant(q.g, name + "_quantized", std::move(codes));
  const quant::Dims shape = n == 1 ? quant::Dims{} : quant::Dims{n};
  Value* s = quant::passes::add_constant(q.g, name + "_scale", Tensor::from_vector<float>(shape, scales));
  Value* z = quant::passes::add_constant(q.g, name + "_zero_point", quantized(t, shape, std::vector<int32_t>(scales.size(), zp)));
  Value* d = q.value(name + "_dequantized");
  auto* node = q.g.add_node("DequantizeLinear", {qv, s, z}, {d}, name + "_DequantizeLinear");
  if (n > 1) node->attributes["axis"] = Attribute::of_int(axis);
  return d;
}

// x -> Q/DQ -> Conv (per-channel int8 weights, int32 bias) -> Relu -> Q/DQ
// -> MaxPool -> Q/DQ -> Flatten -> Q/DQ -> Gemm (transB) -> y, as qconvert
// writes it: clean for base_target().
struct Net {
  QdqGraph q;
  static constexpr float kInput = 0.02f, kRelu = 0.05f;
  explicit Net(float maxpool_scale = kRelu) {
    Value* x = q.qdq(q.input("x"), kInput, 128);
    Value* w = dequantized(q, "w", quantized(DType::Int8, {2, 2, 1, 1}, {127, -3, 5, -127}), {0.01f, 0.02f}, 0);
    Value* b = dequantized(q, "b", quantized(DType::Int32, {2}, {5, -3}), {kInput * 0.01f, kInput * 0.02f}, 0);
    Value* r = q.qdq(q.op("Relu", {q.op("Conv", {x, w, b}, "c")}, "r"), kRelu, 0);
    Value* m = q.qdq(q.op("MaxPool", {r}, "m"), maxpool_scale, 0);
    Value* f = q.qdq(q.op("Flatten", {m}, "f"), maxpool_scale, 0);
    Value* w2 = dequantized(q, "w2", quantized(DType::Int8, {3, 8}, std::vector<int32_t>(24, 50)), {0.1f, 0.2f, 0.3f}, 0);
    Value* b2 = dequantized(q, "b2", quantized(DType::Int32, {3}, {1, 2, 3}),
                            {maxpool_scale * 0.1f, maxpool_scale * 0.2f, maxpool_scale * 0.3f}, 0);
    Value* y = q.op("Gemm", {f, w2, b2}, "y");
    y->producer->attributes["transB"] = Attribute::of_int(1);
    q.g.outputs.push_back(y);
  }
  Tensor& constant(const std::string& name) { return *q.g.find_value(name)->constant; }
  quant::ir::Node& node(const std::string& name) {
    for (const auto& n : q.g.nodes())
      if (n->name == name) return *n;
    FAIL("no node " << name);
    throw;
  }
};

}  // namespace

TEST_CASE("check: a model made to the target's rules has no violation", "[target][check]") {
  Net net;
  const CheckResult r = check_model(net.q.g, base_target());
  CHECK(r.violations.empty());
  CHECK(r.notes.empty());
  CHECK(r.checked.at("activations") == 4);
  CHECK(r.checked.at("weights") == 2);
  CHECK(r.checked.at("biases") == 2);
  CHECK(r.checked.at("nodes") == static_cast<int64_t>(net.q.g.nodes().size()));
  // The JSON form carries the same.
  auto j = nlohmann::json::parse(quant::target::check_json(r, "t", "net.onnx"));
  CHECK(j["target"] == "t");
  CHECK(j["violations"].empty());
  CHECK(j["checked"]["weights"] == 2);
}

TEST_CASE("check: quantize.format, QOperator nodes on a QDQ target and QDQ groups on a QOperator one", "[target][check]") {
  Net net;
  // A QDQ target reads QLinearConv as a violation, and checks its weight's
  // type, range and zero point all the same.
  QdqGraph& q = net.q;
  auto c = [&](const std::string& n, Tensor t) { return quant::passes::add_constant(q.g, n, std::move(t)); };
  Value* xq = q.g.find_value("x_quantized");
  Value* qy = q.g.add_value("qy");
  q.g.add_node("QLinearConv",
               {xq, c("s", Tensor::scalar<float>(0.02f)), c("z", quant::testing::zero_point(DType::UInt8, 128)),
                c("qw", quantized(DType::UInt8, {2, 2, 1, 1}, {128, 1, 255, 0})), c("qws", Tensor::scalar<float>(0.1f)),
                c("qwz", quant::testing::zero_point(DType::UInt8, 128)), c("ys", Tensor::scalar<float>(0.1f)),
                c("yz", quant::testing::zero_point(DType::UInt8, 0))},
               {qy}, "qconv");
  const CheckResult r = check_model(q.g, base_target());
  CHECK(rules(r) == std::vector<std::string>{"quantize.format", "quantize.weights.type", "quantize.weights.range"});
  CHECK(r.violations[0].node == "qconv");
  CHECK(r.violations[0].op_type == "QLinearConv");
  CHECK(r.violations[1].found == "uint8");
  CHECK(r.violations[1].expected == "int8");
  CHECK(r.violations[2].found == "1 of 4 values up to 128 from the zero point");

  // A QOperator target: every DequantizeLinear -> op -> QuantizeLinear group is one.
  Net qdq;
  const CheckResult r2 = check_model(qdq.q.g, base_target(R"(, "format": "qoperator")"));
  CHECK(rules(r2) == std::vector<std::string>{"quantize.format", "quantize.format", "quantize.format"});
  CHECK(r2.violations[0].node == "c_node");  // Conv -> Relu -> Q: one group
  CHECK(r2.violations[1].node == "m_node");
  CHECK(r2.violations[2].node == "f_node");
}

TEST_CASE("check: quantize.activations.type, with uint8 at zero point 0 allowed by symmetric-uint8", "[target][check]") {
  Net net;
  const CheckResult r = check_model(net.q.g, target(R"({"activations": {"type": "int8"}, "weights": {"type": "int8"}})"));
  REQUIRE(r.violations.size() == 4);
  for (const auto& v : r.violations) CHECK(v.rule == "quantize.activations.type");
  CHECK(r.violations[0].node == "x_QuantizeLinear");
  CHECK(r.violations[0].tensor == "x");
  CHECK(r.violations[0].found == "uint8");
  // symmetric-uint8: the Relu output and its followers are uint8 at zero
  // point 0, as the schema makes them for non-negative tensors; x is not.
  const CheckResult s = check_model(net.q.g, target(R"({"activations": {"type": "int8", "schema": "symmetric-uint8"}})"));
  const auto v = only(s);
  CHECK(v.rule == "quantize.activations.type");
  CHECK(v.tensor == "x");
  CHECK(v.expected == "int8 (or uint8 with zero point 0)");
}

TEST_CASE("check: quantize.activations.schema, symmetric zero points and power-of-two scales", "[target][check]") {
  Net net;
  const CheckResult r = check_model(net.q.g, target(R"({"activations": {"type": "uint8", "schema": "symmetric"}})"));
  // uint8 symmetric: the middle code 128; x has it, the Relu output's 0 does not.
  REQUIRE(r.violations.size() == 3);
  CHECK(quant::target::describe(r.violations[0]) ==
        "QuantizeLinear 'r_QuantizeLinear', tensor 'r': quantize.activations.schema: found zero point 0, expected zero point 128 (symmetric)");

  Net p2;
  const CheckResult s = check_model(p2.q.g, target(R"({"activations": {"type": "uint8", "schema": "power2-scale"}})"));
  // x (scale 0.02), the Relu output (zero point 0) and the weights (scale 0.01).
  bool scale_named = false, weight_named = false;
  for (const auto& v : s.violations) {
    CHECK(v.rule == "quantize.activations.schema");
    scale_named |= v.tensor == "x" && v.found == "scale 0.0199999996";
    weight_named |= v.tensor == "w_quantized" && v.found == "weight scale 0.00999999978";
  }
  CHECK(scale_named);
  CHECK(weight_named);
}

TEST_CASE("check: quantize.weights type, symmetric zero point and range", "[target][check]") {
  {
    Net net;
    const CheckResult r = check_model(net.q.g, target(R"({"weights": {"type": "uint8"}})"));
    REQUIRE(r.violations.size() == 2);
    CHECK(quant::target::describe(r.violations[0]) == "Conv 'c_node', tensor 'w_quantized': quantize.weights.type: found int8, expected uint8");
    CHECK(quant::target::describe(r.violations[1]) == "Gemm 'y_node', tensor 'w2_quantized': quantize.weights.type: found int8, expected uint8");
  }
  {
    Net net;
    net.constant("w_quantized").data<int8_t>()[1] = -128;
    const auto v = only(check_model(net.q.g, base_target()));
    CHECK(v.rule == "quantize.weights.range");
    CHECK(v.found == "1 of 4 values up to 128 from the zero point");
    CHECK(v.expected == "[-127, 127] around the zero point");
  }
  {
    Net net;  // 7-bit weights: 127 is out
    const auto v = only(check_model(net.q.g, target(R"({"weights": {"range": [-100, 100]}})")));
    CHECK(v.rule == "quantize.weights.range");
    CHECK(v.found == "2 of 4 values up to 127 from the zero point");
  }
  {
    Net net;  // an asymmetric weight
    net.constant("w_zero_point").data<int8_t>()[0] = 3;  // channel 0's codes stay within 127 of it
    const auto v = only(check_model(net.q.g, base_target()));
    CHECK(v.rule == "quantize.weights.range");
    CHECK(v.found == "zero point 3 (channel 0)");
    CHECK(v.expected == "zero point 0 (symmetric weights)");
  }
}

TEST_CASE("check: quantize.weights.depthwise_type for depthwise convolutions only", "[target][check]") {
  QdqGraph q;
  Value* x = q.qdq(q.input("x"), 0.02f, 128);
  Value* w = dequantized(q, "dw", quantized(DType::Int8, {2, 1, 3, 3}, std::vector<int32_t>(18, 1)), {0.1f, 0.1f}, 0);
  Value* y = q.op("Conv", {x, w}, "y");
  y->producer->attributes["group"] = Attribute::of_int(2);
  q.g.outputs.push_back(y);
  CHECK(check_model(q.g, target(R"({"weights": {"type": "int8", "depthwise_type": "int8"}})")).violations.empty());
  const auto v = only(check_model(q.g, target(R"({"weights": {"type": "int8", "depthwise_type": "uint8"}})")));
  CHECK(v.rule == "quantize.weights.depthwise_type");
  CHECK(v.found == "int8");
  CHECK(v.expected == "uint8");
  // The same weight in a convolution with one group is not depthwise.
  y->producer->attributes["group"] = Attribute::of_int(1);
  CHECK(check_model(q.g, target(R"({"weights": {"type": "int8", "depthwise_type": "uint8"}})")).violations.empty());
}

TEST_CASE("check: quantize.weights.first_layer_range for the layers reading a graph input", "[target][check]") {
  Net net;
  // The Conv reads x through its Q/DQ (codes up to 127); the Gemm (codes 50) does not.
  const auto v = only(check_model(net.q.g, target(R"({"weights": {"first_layer_range": [-64, 64]}})")));
  CHECK(v.rule == "quantize.weights.first_layer_range");
  CHECK(v.node == "c_node");
  CHECK(v.expected == "[-64, 64] around the zero point");
}

TEST_CASE("check: quantize.weights.pair_bound in ONNX Runtime's K order", "[target][check]") {
  Net net;
  // Conv [M=2, C=2, 1, 1]: K runs over the channels; channel 0's pair is
  // (127, -3): 130 > 128; channel 1's (5, -127): 132. The Gemm's pairs are 100.
  const auto v = only(check_model(net.q.g, target(R"({"weights": {"type": "int8", "pair_bound": 128}})")));
  CHECK(v.rule == "quantize.weights.pair_bound");
  CHECK(v.node == "c_node");
  CHECK(v.found == "2 of 2 pairs over the bound (largest |w0| + |w1| = 132)");
  CHECK(check_model(net.q.g, target(R"({"weights": {"type": "int8", "pair_bound": 132}})")).violations.empty());
}

TEST_CASE("check: granularity, per-channel weights break a per-tensor rule, not the reverse", "[target][check]") {
  Net net;
  const CheckResult r = check_model(net.q.g, target(R"({"weights": {"granularity": "per-tensor"}})"));
  CHECK(rules(r) == std::vector<std::string>{"quantize.weights.granularity", "quantize.weights.granularity"});
  CHECK(r.violations[0].found == "per-axis along axis 0 (2 scales)");
  CHECK(r.violations[0].expected == "per-tensor");
  const auto v = only(check_model(net.q.g, target(R"({"weights": {"granularity_by_op": {"Gemm": "per-tensor"}}})")));
  CHECK(v.rule == "quantize.weights.granularity_by_op.Gemm");
  CHECK(v.node == "y_node");
  // Per channel on the wrong axis: Gemm with transB has its N on axis 0.
  net.node("w2_DequantizeLinear").attributes["axis"] = Attribute::of_int(1);
  const auto a = only(check_model(net.q.g, base_target()));
  CHECK(a.rule == "quantize.weights.granularity");
  CHECK(a.expected == "per-channel along axis 0 (3 output channels)");

  // Per-tensor weights under a per-channel target: no violation (a backend
  // that runs per-channel weights runs one scale repeated).
  QdqGraph q;
  Value* x = q.qdq(q.input("x"), 0.02f, 128);
  Value* w = dequantized(q, "w", quantized(DType::Int8, {2, 2}, {1, 2, 3, 4}), {0.1f}, 0);
  q.g.outputs.push_back(q.op("MatMul", {x, w}, "y"));
  CHECK(check_model(q.g, base_target()).violations.empty());
}

TEST_CASE("check: quantize.weights.inputs_by_op, a constant input quantized as a weight", "[target][check]") {
  auto graph = [](bool quantize_scale, QdqGraph& q) {
    Value* x = q.qdq(q.input("x"), 0.02f, 128);
    Value* scale = quantize_scale ? dequantized(q, "gamma", quantized(DType::Int8, {4}, {127, 1, 2, 3}), {0.01f}, 0)
                                  : quant::passes::add_constant(q.g, "gamma", Tensor::from_vector<float>({4}, {1, 1, 1, 1}));
    Value* bias = quant::passes::add_constant(q.g, "beta", Tensor::from_vector<float>({4}, {0, 0, 0, 0}));
    q.g.outputs.push_back(q.qdq(q.op("LayerNormalization", {x, scale, bias}, "y"), 0.1f, 128));
  };
  const TargetSpec t = target(R"({"weights": {"type": "int8", "inputs_by_op": {"LayerNormalization": 1}}})");
  QdqGraph clean, floating;
  graph(true, clean);
  graph(false, floating);
  CHECK(check_model(clean.g, t).violations.empty());
  const auto v = only(check_model(floating.g, t));
  CHECK(v.rule == "quantize.weights.inputs_by_op.LayerNormalization");
  CHECK(v.tensor == "gamma");
  CHECK(v.found == "float constant (not quantized)");
  // Without the rule, a float scale is what the target expects.
  CHECK(check_model(floating.g, base_target()).violations.empty());
}

TEST_CASE("check: quantize.bias, int32 at scale s_in * s_w with zero point 0", "[target][check]") {
  {
    Net net;
    net.constant("b_scale").data<float>()[1] *= 2;
    const auto v = only(check_model(net.q.g, base_target()));
    CHECK(v.rule == "quantize.bias");
    CHECK(v.tensor == "b_quantized");
    CHECK(v.found.find("(channel 1; 1 of 2 channels differ)") != std::string::npos);
    CHECK(v.expected.rfind("s_in * s_w = ", 0) == 0);
  }
  {
    Net net;
    net.constant("b_zero_point").data<int32_t>()[0] = 1;
    CHECK(only(check_model(net.q.g, base_target())).found == "zero point 1");
  }
  {
    // A float bias: quantized ops need int32; an int64 target takes it (no
    // DequantizeLinear reads int64).
    Net net;
    quant::ir::Node& conv = net.node("c_node");
    conv.inputs[2] = quant::passes::add_constant(net.q.g, "fb", Tensor::from_vector<float>({2}, {0.5f, -0.5f}));
    const auto v = only(check_model(net.q.g, base_target()));
    CHECK(v.rule == "quantize.bias");
    CHECK(v.found == "float32 (not quantized)");
    CHECK(check_model(net.q.g, target(R"({"bias": "int64"})")).violations.empty());
  }
  {
    Net net;  // int32 under an int64 target
    CHECK(check_model(net.q.g, target(R"({"bias": "int64"})")).violations.empty());
  }
  {
    // A float-bias target (TensorRT) refuses the int32 one and takes a float one.
    Net net;
    const TargetSpec t = target(R"({"bias": "float"})");
    CHECK(rules(check_model(net.q.g, t)) == std::vector<std::string>{"quantize.bias", "quantize.bias"});  // Conv, Gemm
    net.node("c_node").inputs[2] = quant::passes::add_constant(net.q.g, "fb", Tensor::from_vector<float>({2}, {0.5f, -0.5f}));
    const auto v = only(check_model(net.q.g, t));
    CHECK(v.node == "y_node");
    CHECK(v.found == "a quantized bias");
    CHECK(v.expected == "float");
  }
}

TEST_CASE("check: quantize.fixed_output_params, the Q after the op has exactly those", "[target][check]") {
  auto graph = [](float scale, QdqGraph& q) {
    Value* x = q.qdq(q.input("x"), 0.02f, 0, DType::Int8);
    q.g.outputs.push_back(q.qdq(q.op("Sigmoid", {x}, "s"), scale, 0));
  };
  // Fixed parameters decide the type too: an int8 target accepts Sigmoid's uint8.
  const TargetSpec t = target(R"({"activations": {"type": "int8"}, "fixed_output_params": {"Sigmoid": {"scale": 0.00390625, "zero_point": 0}}})");
  QdqGraph good, bad;
  graph(1.0f / 256, good);
  graph(1.0f / 255, bad);
  CHECK(check_model(good.g, t).violations.empty());
  const auto v = only(check_model(bad.g, t));
  CHECK(v.rule == "quantize.fixed_output_params.Sigmoid");
  CHECK(v.node == "s_QuantizeLinear");
  CHECK(v.found == "uint8 scale 0.00392156886 zero point 0");
  CHECK(v.expected == "scale 0.00390625 zero point 0");
}

TEST_CASE("check: quantize.shares_input_params, the output keeps the input's parameters", "[target][check]") {
  Net net(0.06f);  // MaxPool's (and Flatten's) output at another scale than the Relu's
  const auto v = only(check_model(net.q.g, base_target()));
  CHECK(v.rule == "quantize.shares_input_params");
  CHECK(v.node == "m_node");
  CHECK(v.found == "uint8 scale 0.0599999987 zero point 0");
  CHECK(v.expected == "the input's uint8 scale 0.0500000007 zero point 0");
}

TEST_CASE("check: quantize.same_params, every input and the output share one set", "[target][check]") {
  auto graph = [](float b_scale, QdqGraph& q) {
    Value* a = q.qdq(q.input("a"), 0.2f, 0);
    Value* b = q.qdq(q.input("b"), b_scale, 0);
    q.g.outputs.push_back(q.qdq(q.op("Concat", {a, b}, "c"), 0.2f, 0));
  };
  const TargetSpec t = base_target(R"(, "same_params": ["Concat"])");
  QdqGraph good, bad;
  graph(0.2f, good);
  graph(0.1f, bad);
  CHECK(check_model(good.g, t).violations.empty());
  CHECK(check_model(bad.g, base_target()).violations.empty());  // without the rule
  const auto v = only(check_model(bad.g, t));
  CHECK(v.rule == "quantize.same_params");
  CHECK(v.node == "c_node");
  CHECK(v.found.find("b: uint8 scale 0.100000001") != std::string::npos);
}

TEST_CASE("check: quantize.ops, an op outside the set between Q/DQ runs float there: a note", "[target][check]") {
  Net net;
  const CheckResult r = check_model(net.q.g, target(R"({"ops": ["Conv", "Gemm", "Relu", "Flatten"]})"));
  INFO(quant::target::check_json(r, "t", "m"));
  CHECK(r.violations.empty());
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("MaxPool node 'm_node'") != std::string::npos);
  CHECK(r.notes[0].find("not in quantize.ops: it runs float on this target") != std::string::npos);
  // An op that reads dequantized data and writes float runs float: no violation.
  QdqGraph q;
  q.g.outputs.push_back(q.op("Softmax", {q.qdq(q.input("x"), 0.1f, 0)}, "y"));
  CHECK(check_model(q.g, base_target()).violations.empty());
}

TEST_CASE("check: quantize.matmul_activation_b, B of a MatMul of two activations", "[target][check]") {
  auto graph = [](DType b_type, int32_t b_zp, QdqGraph& q) {
    Value* a = q.qdq(q.input("a"), 0.1f, 128);
    Value* b = q.qdq(q.input("b"), 0.1f, b_zp, b_type);
    q.g.outputs.push_back(q.op("MatMul", {a, b}, "y"));
  };
  const TargetSpec t = base_target(R"(, "matmul_activation_b": {"type": "int8", "schema": "symmetric"})");
  QdqGraph good, wrong_type, wrong_zero;
  graph(DType::Int8, 0, good);
  graph(DType::UInt8, 128, wrong_type);
  graph(DType::Int8, 5, wrong_zero);
  // B's int8 is no quantize.activations.type violation on this uint8 target.
  CHECK(check_model(good.g, t).violations.empty());
  const auto v = only(check_model(wrong_type.g, t));
  CHECK(v.rule == "quantize.matmul_activation_b");
  CHECK(v.tensor == "b");
  CHECK(v.found == "uint8");
  const auto z = only(check_model(wrong_zero.g, t));
  CHECK(z.rule == "quantize.matmul_activation_b");
  CHECK(z.found == "zero point 5");
  // Without the rule B is an activation like any other.
  CHECK(rules(check_model(good.g, base_target())) == std::vector<std::string>{"quantize.activations.type"});
}

TEST_CASE("check: quantize.placement inputs, no Q on an output that only float ops read", "[target][check]") {
  QdqGraph q;
  Value* x = q.qdq(q.input("x"), 0.02f, 128);
  Value* w = dequantized(q, "w", quantized(DType::Int8, {2, 2}, {1, 2, 3, 4}), {0.1f}, 0);
  q.g.outputs.push_back(q.op("Softmax", {q.qdq(q.op("MatMul", {x, w}, "m"), 0.1f, 128)}, "y"));
  CHECK(check_model(q.g, base_target()).violations.empty());
  const auto v = only(check_model(q.g, base_target(R"(, "placement": "inputs")")));
  CHECK(v.rule == "quantize.placement");
  CHECK(v.node == "m_node");
  CHECK(v.tensor == "m");
  // Read by a quantized op, the output's Q is in place.
  Net net;
  CHECK(check_model(net.q.g, base_target(R"(, "placement": "inputs")")).violations.empty());
}

TEST_CASE("check: a violation reads as one line; a float model draws a note", "[target][check]") {
  Net net;
  const auto v = only(check_model(net.q.g, target(R"({"fixed_output_params": {"MaxPool": {"scale": 0.5, "zero_point": 0}}})")));
  INFO(quant::target::describe(v));
  CHECK(quant::target::describe(v).rfind("QuantizeLinear 'm_QuantizeLinear', tensor 'm': quantize.fixed_output_params.MaxPool: found ", 0) == 0);
  CHECK(quant::target::describe(v).find(", expected scale 0.5 zero point 0") != std::string::npos);
  QdqGraph f;
  f.g.outputs.push_back(f.op("Relu", {f.input("x")}, "y"));
  const CheckResult r = check_model(f.g, base_target());
  CHECK(r.violations.empty());
  CHECK(r.notes == std::vector<std::string>{"no quantized tensor found: the model looks float"});
}
