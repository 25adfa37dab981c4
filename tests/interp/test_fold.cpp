#include <catch2/catch.hpp>

#include "libquant/interp/fold.h"
#include "libquant/interp/session.h"

using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;

TEST_CASE("fold_constants turns nodes on constants into initializers, results unchanged", "[interp][fold]") {
  Graph g;
  g.opset_imports[""] = 13;
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  g.inputs = {x};
  Value* w0 = g.add_value("w0");
  w0->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({2}, {1, 2}));
  Value* w = g.add_value("w");
  g.add_node("Identity", {w0}, {w}, "identity");
  Value* two = g.add_value("two");
  two->constant = std::make_unique<Tensor>(Tensor::scalar<float>(2));
  Value* w2 = g.add_value("w2");
  g.add_node("Mul", {w, two}, {w2}, "double_w");
  Value* y = g.add_value("y");
  g.add_node("Add", {x, w2}, {y}, "add");
  g.outputs = {y};

  Tensor in = Tensor::from_vector<float>({2}, {10, 20});
  auto before = (*quant::interp::Session::create(g))->run({in});
  REQUIRE(before.has_value());
  auto folded = quant::interp::fold_constants(g);
  REQUIRE(folded.has_value());
  CHECK(*folded == 2);
  CHECK(g.nodes().size() == 1);
  const Value* w2v = g.find_value("w2");
  REQUIRE(w2v->is_constant());
  CHECK(w2v->constant->data<float>()[1] == 4);
  auto after = (*quant::interp::Session::create(g))->run({in});
  REQUIRE(after.has_value());
  CHECK((*after)[0].data<float>()[0] == (*before)[0].data<float>()[0]);
  CHECK((*after)[0].data<float>()[1] == 24);
}

TEST_CASE("fold_constants leaves DequantizeLinear of quantized weights alone", "[interp][fold]") {
  Graph g;
  g.opset_imports[""] = 13;
  Value* q = g.add_value("q");
  q->constant = std::make_unique<Tensor>(Tensor::from_vector<int8_t>({2}, {1, -1}));
  Value* s = g.add_value("s");
  s->constant = std::make_unique<Tensor>(Tensor::scalar<float>(0.5f));
  Value* w = g.add_value("w");
  g.add_node("DequantizeLinear", {q, s}, {w}, "dq");
  Value* x = g.add_value("x");
  x->dtype = quant::DType::Float32;
  g.inputs = {x};
  Value* y = g.add_value("y");
  g.add_node("Mul", {x, w}, {y}, "mul");
  g.outputs = {y};
  auto folded = quant::interp::fold_constants(g);
  REQUIRE(folded.has_value());
  CHECK(*folded == 0);
  CHECK(g.nodes().size() == 2);
}
