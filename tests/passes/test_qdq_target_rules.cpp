// The backend rules a target adds to QDQ insertion (DESIGN "Targets"):
// shared and fixed parameters, Q/DQ placement, MatMul's B type, weight
// inputs of other ops, the first layers' weight range, int64 bias.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/passes/graph_edit.h"
#include "libquant/passes/qdq.h"
#include "tests/passes/qdq_graph.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;
using quant::testing::profile_of;
using quant::testing::random_tensor;

namespace {

Value* act(Graph& g, const std::string& name, quant::Dims shape = {}) {
  Value* v = g.add_value(name);
  v->dtype = DType::Float32;
  if (!shape.empty()) v->has_shape = true, v->shape = std::move(shape);
  return v;
}

Value* input(Graph& g, const std::string& name, quant::Dims shape) {
  Value* v = act(g, name, std::move(shape));
  g.inputs.push_back(v);
  return v;
}

struct Q {
  DType type = DType::Undefined;
  float scale = 0;
  int32_t zero_point = 0;
  bool found = false;
};

// The QuantizeLinear of the float tensor `name`, or found = false.
Q q_of(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes()) {
    if (n->op_type != "QuantizeLinear" || n->input(0)->name() != name) continue;
    Q q;
    q.found = true;
    q.type = n->outputs[0]->dtype;
    q.scale = n->input(1)->constant->data<float>()[0];
    q.zero_point = static_cast<int32_t>(n->input(2)->constant->as_double(0));
    return q;
  }
  return {};
}

// The integer data behind the DequantizeLinear that feeds `node`'s input i.
const Tensor* dq_data(const Graph& g, const std::string& node, size_t i) {
  for (const auto& n : g.nodes())
    if (n->name == node) {
      const Node* dq = n->input(i)->producer;
      return dq && dq->op_type == "DequantizeLinear" ? dq->input(0)->constant.get() : nullptr;
    }
  return nullptr;
}

int32_t absmax(const Tensor& t) {
  int32_t m = 0;
  for (int64_t i = 0; i < t.size(); ++i) m = std::max(m, static_cast<int32_t>(std::abs(t.as_double(i))));
  return m;
}

std::vector<Tensor> samples(std::mt19937& rng, quant::Dims shape, int n = 8) {
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) out.push_back(random_tensor(shape, rng, -1, 1));
  return out;
}

// x -> Sigmoid -> s;  x -> Mul(10) -> y;  Concat(s, y) -> cat -> Reshape -> r -> Relu -> out
void build_concat(Graph& g) {
  g.opset_imports[""] = 13;
  Value* x = input(g, "x", {1, 4});
  Value *s = act(g, "s"), *y = act(g, "y"), *cat = act(g, "cat"), *r = act(g, "r"), *out = act(g, "out");
  g.add_node("Sigmoid", {x}, {s}, "sigmoid");
  g.add_node("Mul", {x, quant::passes::add_constant(g, "ten", Tensor::from_vector<float>({}, {10.0f}))}, {y}, "mul");
  g.add_node("Concat", {s, y}, {cat}, "concat")->attributes["axis"] = quant::ir::Attribute::of_int(1);
  g.add_node("Reshape", {cat, quant::passes::add_constant(g, "shape", Tensor::from_vector<int64_t>({2}, {2, 4}))}, {r}, "reshape");
  g.add_node("Relu", {r}, {out}, "relu");
  g.outputs = {out};
}

// A profile of random [-1, 1] samples of `shape` for each named tensor.
quant::profile::Profile random_profile(std::mt19937& rng, std::initializer_list<const char*> names, quant::Dims shape) {
  quant::profile::Profile profile;
  for (const char* name : names) {
    auto& tp = profile.tensors.try_emplace(name, quant::profile::TensorProfile{"float32", {}, quant::profile::Histogram(256)}).first->second;
    for (const Tensor& t : samples(rng, shape)) tp.hist.add(t.data<float>(), t.size());
  }
  return profile;
}

quant::passes::QuantizeOptions int8_options(std::set<std::string> ops) {
  quant::passes::QuantizeOptions o;
  o.activations = DType::Int8;
  o.quantized_ops = std::move(ops);
  o.target = "test-target";
  return o;
}

}  // namespace

TEST_CASE("same_params: Concat's inputs and output share the union of their ranges", "[passes][qdq][target]") {
  std::mt19937 rng(1);
  Graph g;
  build_concat(g);
  auto profile = profile_of(g, samples(rng, {1, 4}));
  auto o = int8_options({"Sigmoid", "Mul", "Concat", "Reshape", "Relu"});
  o.shares_input_params = {"Reshape"};
  SECTION("without the rule each tensor has its own") {
    REQUIRE(quant::passes::insert_qdq(g, profile, o));
    CHECK(q_of(g, "s").scale != q_of(g, "y").scale);
  }
  SECTION("with it, one set for s, y, cat and the Reshape that shares cat's") {
    o.same_params = {"Concat"};
    auto report = quant::passes::insert_qdq(g, profile, o);
    REQUIRE(report);
    const Q y = q_of(g, "y");
    REQUIRE(y.found);
    // y spans about [-10, 10]: the shared scale covers it, not s's [0, 1].
    CHECK(y.scale > 15.0f / 255);
    for (const char* name : {"s", "cat", "r"}) {
      CAPTURE(name);
      CHECK(q_of(g, name).scale == y.scale);
      CHECK(q_of(g, name).zero_point == y.zero_point);
    }
    bool explained = false;
    for (const auto& t : report->tensors) explained |= t.tensor == "s" && t.method.find("Concat 'concat'") != std::string::npos;
    CHECK(explained);
  }
  SECTION("a fixed member keeps its parameters when the others do not fit in them") {
    o.same_params = {"Concat"};
    o.fixed_output_params["Sigmoid"] = {1.0f / 256, -128};
    auto report = quant::passes::insert_qdq(g, profile, o);
    REQUIRE(report);
    CHECK(q_of(g, "s").scale == 1.0f / 256);
    CHECK(q_of(g, "s").zero_point == -128);
    CHECK(q_of(g, "cat").scale == q_of(g, "y").scale);
    CHECK(q_of(g, "cat").scale > 15.0f / 255);
    bool noted = false;
    for (const auto& n : report->notes) noted |= n.find("'s' keeps the parameters the target fixes for Sigmoid") != std::string::npos;
    CHECK(noted);
    // The Concat reads s requantized to the group's parameters.
    const Q again = q_of(g, "s_dequantized");
    REQUIRE(again.found);
    CHECK(again.scale == q_of(g, "cat").scale);
    CHECK(again.zero_point == q_of(g, "cat").zero_point);
  }
}

TEST_CASE("a fixed output lends its parameters to the ops that share them", "[passes][qdq][target]") {
  // x -> Sigmoid -> s -> Reshape -> r -> Relu -> out: TFLite wants r == s.
  std::mt19937 rng(2);
  Graph g;
  g.opset_imports[""] = 13;
  Value* x = input(g, "x", {1, 4});
  Value *s = act(g, "s"), *r = act(g, "r"), *out = act(g, "out");
  g.add_node("Sigmoid", {x}, {s}, "sigmoid");
  g.add_node("Reshape", {s, quant::passes::add_constant(g, "shape", Tensor::from_vector<int64_t>({2}, {2, 2}))}, {r}, "reshape");
  g.add_node("Relu", {r}, {out}, "relu");
  g.outputs = {out};
  auto profile = profile_of(g, samples(rng, {1, 4}));
  auto o = int8_options({"Sigmoid", "Reshape", "Relu"});
  o.shares_input_params = {"Reshape"};
  o.fixed_output_params["Sigmoid"] = {1.0f / 256, -128};
  REQUIRE(quant::passes::insert_qdq(g, profile, o));
  CHECK(q_of(g, "r").scale == 1.0f / 256);
  CHECK(q_of(g, "r").zero_point == -128);
}

TEST_CASE("placement inputs: Q/DQ only on what quantized ops read", "[passes][qdq][target]") {
  // x -> Gemm -> h -> Sigmoid (float) -> s -> Gemm -> out
  std::mt19937 rng(3);
  Graph g;
  g.opset_imports[""] = 13;
  Value* x = input(g, "x", {1, 4});
  Value *h = act(g, "h"), *s = act(g, "s"), *out = act(g, "out");
  g.add_node("Gemm", {x, quant::passes::add_constant(g, "w1", random_tensor({4, 4}, rng, -1, 1))}, {h}, "gemm1");
  g.add_node("Sigmoid", {h}, {s}, "sigmoid");
  g.add_node("Gemm", {s, quant::passes::add_constant(g, "w2", random_tensor({4, 3}, rng, -1, 1))}, {out}, "gemm2");
  g.outputs = {out};
  auto profile = profile_of(g, samples(rng, {1, 4}));
  auto o = int8_options({"Gemm"});
  SECTION("all: the first Gemm's output is quantized too") {
    auto report = quant::passes::insert_qdq(g, profile, o);
    REQUIRE(report);
    CHECK(q_of(g, "h").found);
    // The report says why Sigmoid stays float.
    for (const auto& d : report->nodes)
      if (d.op_type == "Sigmoid") CHECK(d.reason.find("not in the op set of target test-target") != std::string::npos);
  }
  SECTION("inputs: it is not; both Gemms' inputs are") {
    o.placement = "inputs";
    REQUIRE(quant::passes::insert_qdq(g, profile, o));
    CHECK(!q_of(g, "h").found);
    CHECK(q_of(g, "x").found);
    CHECK(q_of(g, "s").found);
  }
}

TEST_CASE("matmul_activation_b: B of a MatMul of two activations takes the target's type", "[passes][qdq][target]") {
  std::mt19937 rng(4);
  Graph g;
  g.opset_imports[""] = 13;
  Value* a = input(g, "a", {2, 3});
  Value* b = input(g, "b", {3, 2});
  Value *m = act(g, "m"), *out = act(g, "out");
  g.add_node("MatMul", {a, b}, {m}, "matmul");
  g.add_node("Relu", {m}, {out}, "relu");
  g.outputs = {out};
  std::vector<Tensor> sa = samples(rng, {2, 3}), sb = samples(rng, {3, 2});
  quant::profile::Profile profile;
  for (const auto& [name, data] : {std::pair{"a", &sa}, std::pair{"b", &sb}}) {
    auto& tp = profile.tensors.try_emplace(name, quant::profile::TensorProfile{"float32", (*data)[0].shape(), quant::profile::Histogram(256)}).first->second;
    for (const Tensor& t : *data) tp.hist.add(t.data<float>(), t.size());
  }
  auto o = int8_options({"MatMul", "Relu"});
  o.activations = DType::UInt16;
  o.matmul_b_type = DType::Int16;
  o.matmul_b_schema = quant::calib::Schema::Symmetric;
  REQUIRE(quant::passes::insert_qdq(g, profile, o));
  CHECK(q_of(g, "a").type == DType::UInt16);
  CHECK(q_of(g, "b").type == DType::Int16);
  CHECK(q_of(g, "b").zero_point == 0);
}

TEST_CASE("matmul_activation_b on a tensor that shares its parameters: a requantized copy for the MatMul", "[passes][qdq][target]") {
  // a[2,3], c[2,3] -> Transpose(c) = ct[3,2] (shares c's parameters) -> MatMul(a, ct) -> Relu
  std::mt19937 rng(8);
  Graph g;
  g.opset_imports[""] = 13;
  Value* a = input(g, "a", {2, 3});
  Value* c = input(g, "c", {2, 3});
  Value *ct = act(g, "ct"), *m = act(g, "m"), *out = act(g, "out");
  g.add_node("Transpose", {c}, {ct}, "transpose")->attributes["perm"] = quant::ir::Attribute::of_ints({1, 0});
  g.add_node("MatMul", {a, ct}, {m}, "matmul");
  g.add_node("Relu", {m}, {out}, "relu");
  g.outputs = {out};
  auto profile = random_profile(rng, {"a", "c", "ct"}, {2, 3});
  auto o = int8_options({"MatMul", "Relu", "Transpose"});
  o.activations = DType::UInt16;
  o.shares_input_params = {"Transpose"};
  o.matmul_b_type = DType::Int16;
  REQUIRE(quant::passes::insert_qdq(g, profile, o));
  CHECK(q_of(g, "ct").type == DType::UInt16);  // shared with c
  CHECK(q_of(g, "ct").scale == q_of(g, "c").scale);
  const Q b = q_of(g, "ct_dequantized");  // what the MatMul reads
  REQUIRE(b.found);
  CHECK(b.type == DType::Int16);
  CHECK(b.zero_point == 0);
}

TEST_CASE("weight inputs, the first layer's range and int64 bias", "[passes][qdq][target]") {
  // x -> Gemm(w1, b1) -> h -> LayerNormalization(gamma, beta) -> l -> Gemm(w2, b2) -> out
  std::mt19937 rng(5);
  Graph g;
  g.opset_imports[""] = 17;
  Value* x = input(g, "x", {1, 4});
  Value *h = act(g, "h"), *l = act(g, "l"), *out = act(g, "out");
  auto* g1 = g.add_node("Gemm", {x, quant::passes::add_constant(g, "w1", random_tensor({4, 4}, rng, -1, 1)),
                                 quant::passes::add_constant(g, "b1", random_tensor({4}, rng, -1, 1))}, {h}, "gemm1");
  g1->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.add_node("LayerNormalization", {h, quant::passes::add_constant(g, "gamma", random_tensor({4}, rng, 0.5f, 2)),
                                    quant::passes::add_constant(g, "beta", random_tensor({4}, rng, -1, 1))}, {l}, "norm");
  // b2 is far beyond int32 at s_in * s_w.
  auto* g2 = g.add_node("Gemm", {l, quant::passes::add_constant(g, "w2", random_tensor({3, 4}, rng, -1, 1)),
                                 quant::passes::add_constant(g, "b2", Tensor::from_vector<float>({3}, {1e7f, 0, 0}))}, {out}, "gemm2");
  g2->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.outputs = {out};
  auto profile = profile_of(g, samples(rng, {1, 4}));
  auto o = int8_options({"Gemm", "LayerNormalization"});
  o.weight_inputs["LayerNormalization"] = 1;
  o.first_layer_weight_max = 63;
  o.bias = DType::Int64;
  auto report = quant::passes::insert_qdq(g, profile, o);
  REQUIRE(report);
  const Tensor* w1 = dq_data(g, "gemm1", 1);
  const Tensor* w2 = dq_data(g, "gemm2", 1);
  const Tensor* gamma = dq_data(g, "norm", 1);
  REQUIRE(w1);
  REQUIRE(w2);
  REQUIRE(gamma);
  CHECK(absmax(*w1) == 63);   // first layer: [-63, 63]
  CHECK(absmax(*w2) == 127);  // the others: the full range
  CHECK(gamma->dtype() == DType::Int8);
  CHECK(absmax(*gamma) == 127);
  CHECK(dq_data(g, "gemm1", 2) != nullptr);  // b1 fits int32
  CHECK(dq_data(g, "gemm2", 2) == nullptr);  // b2 stays float
  bool noted = false;
  for (const auto& n : report->notes) noted |= n.find("bias 'b2'") != std::string::npos && n.find("stays float") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("a Relu the target runs float is not fused: the op before it is quantized; bias float", "[passes][qdq][target]") {
  // x -> Gemm(w1, b1) -> h -> Relu -> r -> Gemm(w2) -> out
  std::mt19937 rng(6);
  auto build = [&](Graph& g) {
    g.opset_imports[""] = 13;
    Value* x = input(g, "x", {1, 4});
    Value *h = act(g, "h"), *r = act(g, "r"), *out = act(g, "out");
    g.add_node("Gemm", {x, quant::passes::add_constant(g, "w1", random_tensor({4, 4}, rng, -1, 1)),
                        quant::passes::add_constant(g, "b1", random_tensor({4}, rng, -1, 1))}, {h}, "gemm1");
    g.add_node("Relu", {h}, {r}, "relu");
    g.add_node("Gemm", {r, quant::passes::add_constant(g, "w2", random_tensor({4, 3}, rng, -1, 1))}, {out}, "gemm2");
    g.outputs = {out};
  };
  Graph fused, unfused;
  build(fused);
  build(unfused);
  auto profile = profile_of(fused, samples(rng, {1, 4}));
  REQUIRE(quant::passes::insert_qdq(fused, profile, int8_options({"Gemm", "Relu"})));
  CHECK(!q_of(fused, "h").found);  // Gemm + Relu run as one
  CHECK(q_of(fused, "r").found);
  CHECK(dq_data(fused, "gemm1", 2) != nullptr);
  auto o = int8_options({"Gemm"});
  o.bias = DType::Float32;
  REQUIRE(quant::passes::insert_qdq(unfused, profile, o));
  CHECK(q_of(unfused, "h").found);  // the float Relu reads a dequantized h
  CHECK(q_of(unfused, "r").found);
  CHECK(dq_data(unfused, "gemm1", 2) == nullptr);  // bias float
  CHECK(dq_data(unfused, "gemm1", 1) != nullptr);  // weights still quantized
}

TEST_CASE("the report says why a node of the target's set is not quantized: no float tensor, no channel axis", "[passes][qdq][target]") {
  // i + j (int64) -> k;  x -> ConvTranspose(group 2) -> y -> Relu -> out
  std::mt19937 rng(9);
  Graph g;
  g.opset_imports[""] = 13;
  Value* i = g.add_value("i");
  Value* j = g.add_value("j");
  Value* k = g.add_value("k");
  for (Value* v : {i, j, k}) v->dtype = DType::Int64, v->has_shape = true, v->shape = {2};
  g.inputs = {i, j};
  g.add_node("Add", {i, j}, {k}, "int_add");
  Value* x = input(g, "x", {1, 2, 3, 3});
  Value *y = act(g, "y"), *out = act(g, "out");
  g.add_node("ConvTranspose", {x, quant::passes::add_constant(g, "w", random_tensor({2, 1, 2, 2}, rng, -1, 1))}, {y}, "deconv")
      ->attributes["group"] = quant::ir::Attribute::of_int(2);
  g.add_node("Relu", {y}, {out}, "relu");
  g.outputs = {k, out};
  quant::profile::Profile profile;
  for (const char* name : {"x", "y"}) {  // y's range need not be y's: only its presence matters here
    auto& tp = profile.tensors.try_emplace(name, quant::profile::TensorProfile{"float32", {}, quant::profile::Histogram(256)}).first->second;
    for (const Tensor& t : samples(rng, {1, 2, 3, 3})) tp.hist.add(t.data<float>(), t.size());
  }
  auto report = quant::passes::insert_qdq(g, profile, int8_options({"Add", "ConvTranspose"}));
  if (!report) FAIL(report.status().message());
  bool add_said = false, deconv_said = false;
  for (const auto& d : report->nodes)
    if (d.node == "int_add") add_said = !d.quantized && d.reason == "no float tensor to quantize (inputs: int64, int64)";
  for (const auto& t : report->tensors)
    if (t.tensor == "w") deconv_said = t.method.find("per tensor: a grouped ConvTranspose has no per-channel axis") != std::string::npos;
  CHECK(add_said);
  CHECK(deconv_said);
}

TEST_CASE("wide_nodes: a layer moved to 16 bits reads and writes 16-bit activations", "[passes][qdq][target]") {
  // x -> Gemm g1 -> Relu r1 -> a1 -> Gemm g2 -> Relu r2 -> a2 -> Gemm g3 -> out
  std::mt19937 rng(11);
  auto build = [&](Graph& g) {
    g.opset_imports[""] = 13;
    Value* in = input(g, "x", {1, 4});
    const char* names[] = {"1", "2", "3"};
    for (const char* k : names) {
      const std::string s = k;
      Value* h = act(g, "h" + s);
      auto* gemm = g.add_node("Gemm", {in, quant::passes::add_constant(g, "w" + s, random_tensor({4, 4}, rng, -1, 1))}, {h}, "g" + s);
      gemm->attributes["transB"] = quant::ir::Attribute::of_int(1);
      if (s == "3") {
        g.outputs = {h};
        break;
      }
      in = act(g, "a" + s);
      g.add_node("Relu", {h}, {in}, "r" + s);
    }
  };
  Graph g;
  build(g);
  auto profile = profile_of(g, samples(rng, {1, 4}));
  auto o = int8_options({"Gemm", "Relu"});
  o.activations = DType::UInt8;
  o.wide_nodes = {"g2", "r2"};
  SECTION("moved") {
    o.wide_activations = DType::UInt16;
    auto report = quant::passes::insert_qdq(g, profile, o);
    REQUIRE(report);
    CHECK(q_of(g, "x").type == DType::UInt8);
    CHECK(q_of(g, "a1").type == DType::UInt16);  // what g2 reads
    CHECK(q_of(g, "a2").type == DType::UInt16);  // what g2 (with its fused Relu) writes
    CHECK(!q_of(g, "h2").found);                 // fused: no Q/DQ between g2 and r2
    CHECK(dq_data(g, "g2", 1)->dtype() == DType::Int8);  // weights keep their type
    bool said = false;
    for (const auto& t : report->tensors) said |= t.tensor == "a1" && t.method.find("uint16") != std::string::npos;
    CHECK(said);
  }
  SECTION("no wide type: wide_nodes alone change nothing") {
    REQUIRE(quant::passes::insert_qdq(g, profile, o));
    CHECK(q_of(g, "a1").type == DType::UInt8);
    CHECK(q_of(g, "a2").type == DType::UInt8);
  }
}

TEST_CASE("wide_nodes: a tensor sharing parameters with a moved layer's input is 16-bit too", "[passes][qdq][target]") {
  // a, b -> Concat (same_params) -> c -> Gemm g (moved) -> out
  Graph g;
  g.opset_imports[""] = 13;
  Value *c = act(g, "c"), *out = act(g, "out");
  g.add_node("Concat", {input(g, "a", {1, 2}), input(g, "b", {1, 2})}, {c}, "concat")->attributes["axis"] =
      quant::ir::Attribute::of_int(1);
  std::mt19937 rng(12);
  auto* gemm = g.add_node("Gemm", {c, quant::passes::add_constant(g, "w", random_tensor({3, 4}, rng, -1, 1))}, {out}, "g");
  gemm->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.outputs = {out};
  auto profile = random_profile(rng, {"a", "b", "c"}, {1, 2});
  auto o = int8_options({"Concat", "Gemm"});
  o.same_params = {"Concat"};
  o.wide_nodes = {"g"};
  o.wide_activations = DType::Int16;
  REQUIRE(quant::passes::insert_qdq(g, profile, o));
  for (const char* name : {"a", "b", "c"}) {
    INFO(name);
    CHECK(q_of(g, name).type == DType::Int16);
    CHECK(q_of(g, name).scale == q_of(g, "c").scale);
  }
}
