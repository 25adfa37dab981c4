// Opset upgrade: each rewritten op, built at an old opset, gives the same
// outputs in the interpreter before and after the upgrade (the interpreter
// runs every opset from 7 on), and the upgraded node has the new form.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>

#include "libquant/interp/session.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/opset_upgrade.h"
#include "tests/onnx/proto_builders.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;

namespace {

// A graph under construction: a float input `x` of the given shape.
struct Model {
  Graph& g;
  Value* x;
  Model(Graph& graph, int64_t opset, quant::Dims shape) : g(graph) {
    g.opset_imports[""] = opset;
    x = g.add_value("x");
    x->dtype = DType::Float32;
    x->has_shape = true;
    x->shape = std::move(shape);
    x->dim_names.assign(x->shape.size(), "");
    g.inputs = {x};
  }
  // `op` reading `ins`, writing outputs y0, y1... (all graph outputs).
  Node* op(const std::string& type, std::vector<Value*> ins, int outputs = 1) {
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) {
      outs.push_back(g.add_value("y" + std::to_string(i)));
      outs.back()->dtype = DType::Float32;
    }
    Node* n = g.add_node(type, std::move(ins), outs, "n");
    g.outputs = outs;
    return n;
  }
  Value* constant(const std::string& name, Tensor t) { return quant::passes::add_constant(g, name, std::move(t)); }
};

using Build = std::function<void(Model&)>;

// Values around zero, none repeated.
Tensor sample(const quant::Dims& shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>((i * 7) % 11) * 0.37f - 1.6f + 0.01f * static_cast<float>(i);
  return t;
}

// Builds the model at `from`, upgrades a second copy (`upgraded`) to `to`,
// and checks both give the same bits. Returns the upgrade's notes and values.
quant::passes::OpsetUpgrade check_same_outputs(const Build& build, int64_t from, int64_t to, const quant::Dims& shape,
                                               Graph& upgraded) {
  Graph original;
  Model a(original, from, shape), b(upgraded, from, shape);
  build(a);
  build(b);
  auto up = quant::passes::upgrade_opset(upgraded, to);
  INFO(up.status().message());
  REQUIRE(up.has_value());
  CHECK(upgraded.opset() == to);
  auto s0 = quant::interp::Session::create(original);
  INFO(s0.status().message());
  REQUIRE(s0.has_value());
  auto s1 = quant::interp::Session::create(upgraded);
  INFO(s1.status().message());
  REQUIRE(s1.has_value());
  const Tensor x = sample(shape);
  auto y0 = (*s0)->run({x});
  auto y1 = (*s1)->run({x});
  REQUIRE(y0.has_value());
  REQUIRE(y1.has_value());
  REQUIRE(y0->size() == y1->size());
  for (size_t i = 0; i < y0->size(); ++i) {
    const Tensor &p = (*y0)[i], &q = (*y1)[i];
    REQUIRE(p.shape() == q.shape());
    REQUIRE(p.dtype() == q.dtype());
    CHECK(std::memcmp(p.raw(), q.raw(), p.byte_size()) == 0);
  }
  return *up;
}

const Node* node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name) return n.get();
  return nullptr;
}

}  // namespace

TEST_CASE("Upsample-7 and -9 become Resize with the same outputs", "[passes][opset_upgrade]") {
  for (int64_t to : {10, 11, 13}) {
    for (const char* mode : {"nearest", "linear"}) {
      Graph g7, g9;
      check_same_outputs([&](Model& m) {
        m.op("Upsample", {m.x})->attributes = {{"scales", Attribute::of_floats({1, 1, 2, 3})},
                                              {"mode", Attribute::of_string(mode)}};
      }, 7, to, {1, 2, 3, 2}, g7);
      check_same_outputs([&](Model& m) {
        m.op("Upsample", {m.x, m.constant("s", Tensor::from_vector<float>({4}, {1, 1, 3, 2}))})->attributes["mode"] =
            Attribute::of_string(mode);
      }, 9, to, {1, 2, 3, 2}, g9);
      for (const Graph* g : {&g7, &g9}) {
        const Node* n = node_named(*g, "n");
        REQUIRE(n);
        CHECK(n->op_type == "Resize");
        CHECK(n->inputs.size() == (to >= 11 ? 3u : 2u));
        if (to >= 11) CHECK(n->attr_string("coordinate_transformation_mode", "") == "asymmetric");
      }
    }
  }
}

TEST_CASE("Resize-10 becomes Resize-11 with asymmetric coordinates", "[passes][opset_upgrade]") {
  for (std::vector<float> scales : {std::vector<float>{1, 1, 2, 1.5f}, std::vector<float>{1, 1, 0.5f, 0.75f}}) {
    Graph g;
    check_same_outputs([&](Model& m) {
      m.op("Resize", {m.x, m.constant("s", Tensor::from_vector<float>({4}, scales))});
    }, 10, 13, {1, 2, 4, 4}, g);
    CHECK(node_named(g, "n")->attr_string("nearest_mode", "") == (scales[2] > 1 ? "floor" : "ceil"));
  }
  // Scales that grow one axis and shrink another round differently per axis at 10.
  Graph g;
  Model m(g, 10, {1, 1, 4, 4});
  m.op("Resize", {m.x, m.constant("s", Tensor::from_vector<float>({4}, {1, 1, 2, 0.5f}))});
  auto up = quant::passes::upgrade_opset(g, 13);
  REQUIRE_FALSE(up.has_value());
  CHECK_THAT(up.status().message(), Catch::Contains("opset upgrade 10 -> 13: Resize node 'n'"));
  CHECK(g.opset() == 10);
}

TEST_CASE("Slice-1 attributes become Slice-10 inputs", "[passes][opset_upgrade]") {
  for (int64_t to : {10, 13}) {
    Graph g;
    auto up = check_same_outputs([](Model& m) {
      m.op("Slice", {m.x})->attributes = {{"starts", Attribute::of_ints({1, -3})},
                                          {"ends", Attribute::of_ints({1000, -1})},
                                          {"axes", Attribute::of_ints({1, 2})}};
    }, 9, to, {2, 3, 5}, g);
    const Node* n = node_named(g, "n");
    CHECK(n->inputs.size() == 4);
    CHECK(n->attributes.empty());
    REQUIRE(up.notes.size() == 1);
    CHECK_THAT(up.notes[0], Catch::Contains("Slice-10"));
  }
}

TEST_CASE("Pad-2 attributes become Pad-11 inputs", "[passes][opset_upgrade]") {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    Graph g;
    check_same_outputs([&](Model& m) {
      m.op("Pad", {m.x})->attributes = {{"pads", Attribute::of_ints({0, 1, 2, 0, 2, 1})},
                                        {"value", Attribute::of_float(1.5f)},
                                        {"mode", Attribute::of_string(mode)}};
    }, 8, 13, {1, 3, 4}, g);
    CHECK(node_named(g, "n")->find_attribute("pads") == nullptr);
  }
}

TEST_CASE("Clip-6 min/max become Clip-11 inputs", "[passes][opset_upgrade]") {
  Graph both, only_max;
  check_same_outputs([](Model& m) {
    m.op("Clip", {m.x})->attributes = {{"min", Attribute::of_float(-0.5f)}, {"max", Attribute::of_float(0.75f)}};
  }, 9, 13, {2, 6}, both);
  CHECK(node_named(both, "n")->inputs.size() == 3);
  check_same_outputs([](Model& m) { m.op("Clip", {m.x})->attributes = {{"max", Attribute::of_float(0.75f)}}; }, 7, 11,
                     {2, 6}, only_max);
  const Node* n = node_named(only_max, "n");
  REQUIRE(n->inputs.size() == 3);
  CHECK(n->inputs[1] == nullptr);
}

TEST_CASE("Split, Squeeze, Unsqueeze and ReduceSum take their attribute as an input at 13", "[passes][opset_upgrade]") {
  Graph split, squeeze, unsqueeze, reduce_sum, reduce_mean;
  check_same_outputs([](Model& m) {
    Node* n = m.op("Split", {m.x}, 2);
    n->attributes = {{"axis", Attribute::of_int(1)}, {"split", Attribute::of_ints({1, 3})}};
  }, 9, 13, {2, 4}, split);
  check_same_outputs([](Model& m) { m.op("Squeeze", {m.x})->attributes["axes"] = Attribute::of_ints({0, 2}); }, 9, 13,
                     {1, 3, 1, 2}, squeeze);
  check_same_outputs([](Model& m) { m.op("Unsqueeze", {m.x})->attributes["axes"] = Attribute::of_ints({0, 3}); }, 9,
                     13, {3, 2}, unsqueeze);
  check_same_outputs([](Model& m) {
    m.op("ReduceSum", {m.x})->attributes = {{"axes", Attribute::of_ints({1})}, {"keepdims", Attribute::of_int(0)}};
  }, 9, 13, {2, 3, 4}, reduce_sum);
  // ReduceMean keeps its axes attribute until opset 18.
  check_same_outputs([](Model& m) { m.op("ReduceMean", {m.x})->attributes["axes"] = Attribute::of_ints({2}); }, 9, 13,
                     {2, 3, 4}, reduce_mean);
  for (const Graph* g : {&split, &squeeze, &unsqueeze, &reduce_sum}) {
    const Node* n = node_named(*g, "n");
    CHECK(n->inputs.size() == 2);
    CHECK(n->find_attribute("axes") == nullptr);
    CHECK(n->find_attribute("split") == nullptr);
  }
  CHECK(node_named(reduce_mean, "n")->find_attribute("axes") != nullptr);
}

TEST_CASE("Softmax, LogSoftmax and Hardmax keep their pre-13 2-D semantics", "[passes][opset_upgrade]") {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    // Default axis 1 of a rank-3 input: coerced to [2, 12] before 13.
    Graph coerced;
    auto up = check_same_outputs([&](Model& m) { m.op(op, {m.x}); }, 9, 13, {2, 3, 4}, coerced);
    CHECK(coerced.nodes().size() == 4);  // Flatten, Shape, the op, Reshape
    CHECK(node_named(coerced, "n")->attr_int("axis", 0) == -1);
    REQUIRE(up.same_values.size() == 2);
    CHECK(up.same_values[0].second == "x");
    CHECK(up.same_values[1].second == "y0");
    CHECK(coerced.outputs[0]->name() == "y0");
    // The last axis: one axis either way, no extra nodes.
    Graph last;
    check_same_outputs([&](Model& m) { m.op(op, {m.x})->attributes["axis"] = Attribute::of_int(2); }, 9, 13, {2, 3, 4},
                       last);
    CHECK(last.nodes().size() == 1);
    // A rank the upgrade cannot see (an intermediate value without shape).
    Graph unknown;
    check_same_outputs([&](Model& m) {
      Value* r = m.g.add_value("r");
      m.g.add_node("Relu", {m.x}, {r}, "relu");
      m.op(op, {r})->attributes["axis"] = Attribute::of_int(0);
    }, 8, 13, {2, 3, 4}, unknown);
  }
}

TEST_CASE("BatchNormalization-7 loses spatial and legacy attributes", "[passes][opset_upgrade]") {
  auto params = [](Model& m, quant::Dims shape) {
    const int64_t n = [&] { int64_t k = 1; for (auto d : shape) k *= d; return k; }();
    std::vector<Value*> v;
    for (int i = 0; i < 4; ++i) {
      Tensor t(DType::Float32, shape);
      for (int64_t j = 0; j < n; ++j) t.data<float>()[j] = 0.5f + 0.25f * static_cast<float>((j + i) % 3);
      v.push_back(m.constant("p" + std::to_string(i), std::move(t)));
    }
    return v;
  };
  Graph spatial, per_element;
  check_same_outputs([&](Model& m) {
    auto p = params(m, {3});
    Node* n = m.op("BatchNormalization", {m.x, p[0], p[1], p[2], p[3]});
    n->attributes = {{"spatial", Attribute::of_int(1)}, {"consumed_inputs", Attribute::of_ints({0, 0, 0, 1, 1})},
                     {"epsilon", Attribute::of_float(1e-3f)}};
  }, 7, 13, {2, 3, 2, 2}, spatial);
  CHECK(node_named(spatial, "n")->attributes.size() == 1);  // epsilon
  check_same_outputs([&](Model& m) {
    auto p = params(m, {3, 2, 2});
    m.op("BatchNormalization", {m.x, p[0], p[1], p[2], p[3]})->attributes["spatial"] = Attribute::of_int(0);
  }, 8, 13, {2, 3, 2, 2}, per_element);
  CHECK(node_named(per_element, "n")->find_attribute("spatial") == nullptr);
}

TEST_CASE("Dropout-7 ratio becomes an input and an unused mask is dropped", "[passes][opset_upgrade]") {
  Graph g;
  check_same_outputs([](Model& m) {
    Node* n = m.op("Dropout", {m.x}, 1);
    Value* mask = m.g.add_value("mask");
    n->outputs.push_back(mask);
    mask->producer = n;
    n->attributes["ratio"] = Attribute::of_float(0.3f);
  }, 7, 13, {2, 5}, g);
  const Node* n = node_named(g, "n");
  CHECK(n->inputs.size() == 2);
  CHECK(n->outputs.size() == 1);
}

TEST_CASE("Scatter becomes ScatterElements at 11", "[passes][opset_upgrade]") {
  Graph g;
  check_same_outputs([](Model& m) {
    Value* i = m.constant("i", Tensor::from_vector<int64_t>({2, 2}, {2, 0, 1, 2}));
    Value* u = m.constant("u", Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8}));
    m.op("Scatter", {m.x, i, u})->attributes["axis"] = Attribute::of_int(1);
  }, 9, 13, {2, 3}, g);
  CHECK(node_named(g, "n")->op_type == "ScatterElements");
}

TEST_CASE("TopK-1 k becomes an input", "[passes][opset_upgrade]") {
  Graph g;
  check_same_outputs([](Model& m) {
    Node* n = m.op("TopK", {m.x}, 2);
    n->outputs[1]->dtype = DType::Int64;
    n->attributes["k"] = Attribute::of_int(2);
  }, 9, 10, {3, 5}, g);
  CHECK(node_named(g, "n")->inputs.size() == 2);
}

TEST_CASE("Ops whose semantics did not change only take the new opset", "[passes][opset_upgrade]") {
  Graph g;
  auto up = check_same_outputs([](Model& m) {
    Value* w = m.constant("w", Tensor::from_vector<float>({3, 2}, {1, -1, 0.5f, 2, 0, 1}));
    Value* r = m.g.add_value("r");
    m.g.add_node("Relu", {m.x}, {r}, "relu");
    m.op("Gemm", {r, w})->attributes["alpha"] = Attribute::of_float(0.5f);
  }, 7, 13, {4, 3}, g);
  CHECK(up.notes.empty());
  CHECK(g.ir_version >= 7);
}

TEST_CASE("An op without an upgrade is refused, naming it and the opsets, and nothing changes", "[passes][opset_upgrade]") {
  Graph g;
  Model m(g, 9, {2, 3});
  Value* r = m.g.add_value("r");
  Node* slice = m.g.add_node("Slice", {m.x}, {r}, "slice");
  slice->attributes = {{"starts", Attribute::of_ints({0})}, {"ends", Attribute::of_ints({1})}};
  m.op("LpPool", {r})->attributes["kernel_shape"] = Attribute::of_ints({1});
  auto up = quant::passes::upgrade_opset(g, 13);
  REQUIRE_FALSE(up.has_value());
  CHECK(up.status().code() == quant::StatusCode::kBadInput);
  CHECK(up.status().message() == "opset upgrade 9 -> 13: LpPool node 'n': no upgrade of LpPool is implemented");
  CHECK(g.opset() == 9);
  CHECK(slice->find_attribute("starts") != nullptr);

  Graph scan;
  Model s(scan, 8, {2, 3});
  s.op("Scan", {s.x});
  auto refused = quant::passes::upgrade_opset(scan, 10);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.status().message(), Catch::Contains("opset upgrade 8 -> 10: Scan node 'n': Scan-9"));

  Graph old;
  Model o(old, 6, {2});
  o.op("Relu", {o.x});
  auto too_old = quant::passes::upgrade_opset(old, 13);
  REQUIRE_FALSE(too_old.has_value());
  CHECK_THAT(too_old.status().message(), Catch::Contains("upgrades start at opset 7, the model has 6"));
}

TEST_CASE("If bodies are checked: only ops needing no rewrite pass", "[passes][opset_upgrade]") {
  using namespace quant::test;
  // z = If(cond) then body_op(x) else Identity(x), at opset 9.
  auto model = [](const std::string& body_op) {
    onnx::GraphProto then_g, else_g, g;
    auto* inner = add_node(&then_g, body_op, {"x"}, {"t"});
    if (body_op == "Slice") {
      for (const char* name : {"starts", "ends"}) {
        auto* a = inner->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(name[0] == 's' ? 0 : 1);
      }
    }
    then_g.add_output()->set_name("t");
    add_node(&else_g, "Identity", {"x"}, {"e"});
    else_g.add_output()->set_name("e");
    set_type(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
    set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {2});
    auto* n = add_node(&g, "If", {"cond"}, {"z"});
    add_graph_attr(n, "then_branch", then_g);
    add_graph_attr(n, "else_branch", else_g);
    g.add_output()->set_name("z");
    return model_with(g, 9);
  };
  auto plain = quant::onnx_io::import_model(model("Relu"), ".");
  REQUIRE(plain.has_value());
  auto up = quant::passes::upgrade_opset(**plain, 13);
  INFO(up.status().message());
  REQUIRE(up.has_value());
  CHECK((*plain)->opset() == 13);

  auto sliced = quant::onnx_io::import_model(model("Slice"), ".");
  REQUIRE(sliced.has_value());
  auto refused = quant::passes::upgrade_opset(**sliced, 13);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.status().message(),
             Catch::Contains("If node 'If_1': its then_branch body's Slice node 'Slice_1': Slice-10 needs a rewrite"));
  CHECK((*sliced)->opset() == 9);
}

TEST_CASE("An attribute of the wrong type is refused, not misread", "[passes][opset_upgrade]") {
  Graph g;
  Model m(g, 9, {2, 3});
  m.op("Slice", {m.x})->attributes = {{"starts", Attribute::of_floats({0})}, {"ends", Attribute::of_ints({1})}};
  auto up = quant::passes::upgrade_opset(g, 10);
  REQUIRE_FALSE(up.has_value());
  CHECK(up.status().message() == "opset upgrade 9 -> 10: Slice node 'n': attribute 'starts' has the wrong type");
}

TEST_CASE("A rank hint keeps a Softmax over the last axis of an undeclared value as one node", "[passes][opset_upgrade]") {
  auto build = [](Graph& g) {
    Model m(g, 9, {2, 5});
    Value* r = m.g.add_value("r");  // no declared shape
    m.g.add_node("Relu", {m.x}, {r}, "relu");
    m.op("Softmax", {r});  // axis 1: the last of a rank-2 value
  };
  Graph hinted, blind;
  build(hinted);
  build(blind);
  auto up = quant::passes::upgrade_opset(hinted, 13, [](const Value& v) -> int64_t { return v.name() == "r" ? 2 : -1; });
  REQUIRE(up.has_value());
  CHECK(hinted.nodes().size() == 2);
  CHECK(up->same_values.empty());
  REQUIRE(quant::passes::upgrade_opset(blind, 13).has_value());
  CHECK(blind.nodes().size() == 5);  // Relu, Flatten, Shape, Softmax, Reshape
}
