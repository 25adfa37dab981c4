// Quantization points and their layers (passes/quant_points.h): who owns which
// Q/DQ, and that making layers float gives back the float model's arithmetic.
#include <catch2/catch.hpp>

#include <optional>
#include <random>

#include "libquant/passes/graph_edit.h"
#include "libquant/passes/qdq.h"
#include "libquant/passes/quant_points.h"
#include "tests/passes/qdq_graph.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;
using quant::testing::random_tensor;
namespace passes = quant::passes;

namespace {

Value* act(Graph& g, const std::string& name) {
  Value* v = g.add_value(name);
  v->dtype = DType::Float32;
  return v;
}

// x -> Conv(w, b) -> Relu -> MaxPool -> Flatten -> Gemm(w2, b2) -> y
void build(Graph& g) {
  std::mt19937 rng(5);
  g.opset_imports[""] = 13;
  Value* x = act(g, "x");
  x->has_shape = true, x->shape = {1, 2, 6, 6};
  g.inputs.push_back(x);
  Value* c = act(g, "c");
  Value* r = act(g, "r");
  Value* p = act(g, "p");
  Value* f = act(g, "f");
  Value* y = act(g, "y");
  g.add_node("Conv", {x, passes::add_constant(g, "w", random_tensor({3, 2, 3, 3}, rng, -1, 1)),
                      passes::add_constant(g, "b", random_tensor({3}, rng, -0.2f, 0.2f))},
             {c}, "conv")->attributes["pads"] = quant::ir::Attribute::of_ints({1, 1, 1, 1});
  g.add_node("Relu", {c}, {r}, "relu");
  auto* pool = g.add_node("MaxPool", {r}, {p}, "pool");
  pool->attributes["kernel_shape"] = quant::ir::Attribute::of_ints({2, 2});
  pool->attributes["strides"] = quant::ir::Attribute::of_ints({2, 2});
  g.add_node("Flatten", {p}, {f}, "flatten");
  g.add_node("Gemm", {f, passes::add_constant(g, "w2", random_tensor({4, 27}, rng, -0.5f, 0.5f)),
                      passes::add_constant(g, "b2", random_tensor({4}, rng, -0.1f, 0.1f))},
             {y}, "gemm")->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.outputs.push_back(y);
}

std::vector<Tensor> samples() {
  std::mt19937 rng(9);
  std::vector<Tensor> s;
  for (int i = 0; i < 4; ++i) s.push_back(random_tensor({1, 2, 6, 6}, rng, -2, 2));
  return s;
}

const passes::QuantLayer& layer(const std::vector<passes::QuantLayer>& layers, const std::string& name) {
  for (const auto& l : layers)
    if (l.node->name == name) return l;
  FAIL("no layer " + name);
  return layers.front();
}

// The float model and its QDQ form as qconvert writes it, with its layers.
struct Quantized {
  Graph f, q;
  std::optional<std::vector<passes::QuantLayer>> layers;
  Quantized() {
    build(f);
    build(q);
    REQUIRE(passes::insert_qdq(q, quant::testing::profile_of(f, samples()), {}));
    auto l = passes::find_quant_layers(q);
    REQUIRE(l);
    layers = std::move(l).value();
  }
};

}  // namespace

TEST_CASE("find_quant_layers: each layer owns its weights, its output's Q and a graph input's first Q", "[passes][sensitivity]") {
  Quantized m;
  auto& layers = m.layers;
  std::vector<std::string> names;
  for (const auto& l : *layers) names.push_back(l.node->name);
  // The fused Relu reads no DQ: not a layer; Flatten does (Q/DQ after MaxPool).
  CHECK(names == std::vector<std::string>{"conv", "pool", "flatten", "gemm"});
  const auto& conv = layer(*layers, "conv");
  CHECK(conv.constant_dqs.size() == 2);  // weight and bias
  REQUIRE(conv.activation_qs.size() == 2);  // x's Q (first reader) and the Q after the fused Relu
  CHECK(conv.activation_qs[0]->input(0)->name() == "x");
  CHECK(conv.activation_qs[1]->input(0)->name() == "r");
  CHECK(layer(*layers, "gemm").activation_qs.empty());  // its output is a float graph output
}

TEST_CASE("make_layers_float: all layers float computes the float model bit for bit", "[passes][sensitivity]") {
  Quantized m;
  Graph& f = m.f;
  Graph& q = m.q;
  auto& layers = m.layers;
  std::set<size_t> all;
  for (size_t i = 0; i < layers->size(); ++i) all.insert(i);
  const auto made = passes::make_layers_float(q, *layers, all, passes::constants_of(f));
  CHECK(made.kept_constants == 0);
  CHECK(made.float_constants == 4);
  for (const auto& n : q.nodes()) CHECK((n->op_type != "QuantizeLinear" && n->op_type != "DequantizeLinear"));
  for (const Tensor& x : samples()) {
    const Tensor want = quant::testing::run_graph(f, {x})[0];
    const Tensor got = quant::testing::run_graph(q, {x})[0];
    REQUIRE(want.shape() == got.shape());
    for (int64_t i = 0; i < want.size(); ++i) REQUIRE(want.data<float>()[i] == got.data<float>()[i]);
  }
}

TEST_CASE("make_layers_float: one layer float leaves the others quantized; no float twin keeps its DQ", "[passes][sensitivity]") {
  Quantized m;
  Graph& q = m.q;
  auto& layers = m.layers;
  size_t gemm = 0;
  for (size_t i = 0; i < layers->size(); ++i)
    if ((*layers)[i].node->name == "gemm") gemm = i;
  // A reference without the node: its constants stay dequantized.
  Graph empty;
  const auto kept = passes::make_layers_float(q, *layers, {gemm}, passes::constants_of(empty));
  CHECK(kept.kept_constants == 2);
  CHECK(kept.float_constants == 0);
  Node* g = nullptr;
  for (const auto& n : q.nodes())
    if (n->name == "gemm") g = n.get();
  REQUIRE(g);
  CHECK(g->input(1)->producer->op_type == "DequantizeLinear");
  // Conv's weights are still dequantized, its output still quantized.
  size_t qs = 0;
  for (const auto& n : q.nodes()) qs += n->op_type == "QuantizeLinear";
  CHECK(qs == 4);  // x, r, p, f: gemm owned none
}
