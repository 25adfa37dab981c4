#include <catch2/catch.hpp>

#include "libquant/ir/graph.h"
#include "libquant/ir/signature.h"

using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;

namespace {

// in -> A -> a -> B -> b, built out of order to exercise sorting.
struct Chain {
  Graph g;
  Value *in, *a, *b;
  Node *na, *nb;
  Chain() {
    in = g.add_value("in");
    a = g.add_value("a");
    b = g.add_value("b");
    g.inputs = {in};
    nb = g.add_node("Relu", {a}, {b}, "B");
    na = g.add_node("Relu", {in}, {a}, "A");
    g.outputs = {b};
  }
};

}  // namespace

TEST_CASE("topological order follows data, not insertion", "[ir]") {
  Chain c;
  auto order = c.g.topological_order();
  REQUIRE(order.has_value());
  CHECK(*order == std::vector<Node*>{c.na, c.nb});
  REQUIRE(c.g.sort_topologically().is_ok());
  CHECK(c.g.nodes()[0].get() == c.na);
  CHECK(quant::ir::verify(c.g).is_ok());
}

TEST_CASE("a cycle is reported naming a node on it", "[ir]") {
  Chain c;
  c.na->inputs[0] = c.b;  // A reads B's output, B reads A's
  auto order = c.g.topological_order();
  REQUIRE_FALSE(order.has_value());
  CHECK_THAT(order.status().message(), Catch::Contains("cycle"));
}

TEST_CASE("verify names an input nothing produces", "[ir]") {
  Chain c;
  Value* ghost = c.g.add_value("ghost");
  c.nb->inputs.push_back(ghost);
  auto st = quant::ir::verify(c.g);
  REQUIRE_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("'ghost'"));
}

TEST_CASE("values: unique names, uses, consumers and clean-up", "[ir]") {
  Chain c;
  CHECK(c.g.add_value("a") == nullptr);
  CHECK(c.g.unique_name("a") != "a");
  CHECK(c.g.unique_name("fresh") == "fresh");
  CHECK(c.g.consumers(c.a) == std::vector<Node*>{c.nb});
  Value* a2 = c.g.add_value("a2");
  c.g.replace_all_uses(c.a, a2);
  CHECK(c.nb->inputs[0] == a2);
  c.g.add_value("unused");
  c.g.remove_unused_values();
  CHECK(c.g.find_value("unused") == nullptr);
  CHECK(c.g.find_value("in") != nullptr);
}

TEST_CASE("constant_data sees initializers and Constant nodes", "[ir]") {
  Graph g;
  Value* init = g.add_value("w");
  init->constant = std::make_unique<quant::Tensor>(quant::Tensor::scalar<float>(2.0f));
  Value* cv = g.add_value("c");
  Node* n = g.add_node("Constant", {}, {cv}, "C");
  n->attributes["value"] = quant::ir::Attribute::of_tensor(quant::Tensor::scalar<float>(3.0f));
  Value* x = g.add_value("x");
  REQUIRE(quant::ir::constant_data(init) != nullptr);
  CHECK(quant::ir::constant_data(cv)->data<float>()[0] == 3.0f);
  CHECK(quant::ir::constant_data(x) == nullptr);
}

TEST_CASE("graph signature changes with structure only", "[ir]") {
  Chain c1, c2;
  CHECK(quant::ir::graph_signature(c1.g) == quant::ir::graph_signature(c2.g));
  CHECK(quant::ir::graph_signature(c1.g).size() == 64);
  c2.nb->op_type = "Sigmoid";
  CHECK(quant::ir::graph_signature(c1.g) != quant::ir::graph_signature(c2.g));
}
