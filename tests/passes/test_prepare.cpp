#include <catch2/catch.hpp>

#include <cmath>

#include "libquant/interp/session.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/prepare.h"

using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;

namespace {

// x -> Conv(w, [b]) -> c -> BatchNormalization -> y
void build(Graph& g, bool with_bias) {
  g.opset_imports[""] = 13;
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  g.inputs = {x};
  Value* w = quant::passes::add_constant(g, "w", Tensor::from_vector<float>({2, 1, 1, 2}, {1, 2, -1, 0.5f}));
  std::vector<Value*> ins{x, w};
  if (with_bias) ins.push_back(quant::passes::add_constant(g, "b", Tensor::from_vector<float>({2}, {0.5f, -1})));
  Value* c = g.add_value("c");
  g.add_node("Conv", ins, {c}, "conv");
  Value* y = g.add_value("y");
  auto* bn = g.add_node("BatchNormalization",
                        {c, quant::passes::add_constant(g, "gamma", Tensor::from_vector<float>({2}, {2, 0.5f})),
                         quant::passes::add_constant(g, "beta", Tensor::from_vector<float>({2}, {0.1f, 0.2f})),
                         quant::passes::add_constant(g, "mean", Tensor::from_vector<float>({2}, {1, -2})),
                         quant::passes::add_constant(g, "var", Tensor::from_vector<float>({2}, {4, 0.25f}))},
                        {y}, "bn");
  bn->attributes["epsilon"] = quant::ir::Attribute::of_float(1e-3f);
  g.outputs = {y};
}

}  // namespace

TEST_CASE("BatchNormalization folds into the preceding Conv without changing results", "[passes][prepare]") {
  for (bool with_bias : {true, false}) {
    Graph ref, folded;
    build(ref, with_bias);
    build(folded, with_bias);
    std::vector<std::string> notes;
    REQUIRE(quant::passes::fold_batchnorm(folded, notes).is_ok());
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Catch::Contains("'bn'"));
    CHECK(folded.nodes().size() == 1);
    CHECK(folded.outputs[0]->name() == "y");
    CHECK(folded.outputs[0]->producer->op_type == "Conv");
    Tensor x = Tensor::from_vector<float>({1, 1, 2, 3}, {1, -2, 3, 0.5f, 4, -1});
    auto a = (*quant::interp::Session::create(ref))->run({x});
    auto b = (*quant::interp::Session::create(folded))->run({x});
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    for (int64_t i = 0; i < (*a)[0].size(); ++i) CHECK((*b)[0].data<float>()[i] == Approx((*a)[0].data<float>()[i]).epsilon(1e-5));
  }
}

TEST_CASE("BatchNormalization stays when the Conv output has another user", "[passes][prepare]") {
  Graph g;
  build(g, true);
  Value* extra = g.add_value("extra");
  g.add_node("Relu", {g.find_value("c")}, {extra}, "relu");
  g.outputs.push_back(extra);
  std::vector<std::string> notes;
  REQUIRE(quant::passes::fold_batchnorm(g, notes).is_ok());
  CHECK(notes.empty());
  CHECK(g.nodes().size() == 3);
}

TEST_CASE("Constant nodes become initializers", "[passes][prepare]") {
  Graph g;
  g.opset_imports[""] = 13;
  Value* k = g.add_value("k");
  auto* n = g.add_node("Constant", {}, {k}, "const");
  n->attributes["value"] = quant::ir::Attribute::of_tensor(Tensor::scalar<float>(2));
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  g.inputs = {x};
  Value* y = g.add_value("y");
  g.add_node("Mul", {x, k}, {y}, "mul");
  g.outputs = {y};
  CHECK(quant::passes::constants_to_initializers(g) == 1);
  CHECK(g.nodes().size() == 1);
  REQUIRE(k->is_constant());
  CHECK(k->constant->data<float>()[0] == 2);
  CHECK(quant::ir::verify(g).is_ok());
}
