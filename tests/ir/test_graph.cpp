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

TEST_CASE("implicit inputs (values a subgraph reads) are uses", "[ir]") {
  // k -> Relu -> r; an If-like node reads r only inside its body. Built out of
  // order: sorting must still put the Relu first.
  Graph g;
  Value* in = g.add_value("in");
  Value* k = g.add_value("k");
  Value* r = g.add_value("r");
  Value* out = g.add_value("out");
  Value* body_only = g.add_value("body_only");
  body_only->constant = std::make_unique<quant::Tensor>(quant::Tensor::scalar<float>(1));
  g.inputs = {in, k};
  Node* user = g.add_node("If", {in}, {out}, "if");
  user->implicit_inputs = {r, body_only};
  Node* relu = g.add_node("Relu", {k}, {r}, "relu");
  g.outputs = {out};
  auto order = g.topological_order();
  REQUIRE(order.has_value());
  CHECK(*order == std::vector<Node*>{relu, user});
  CHECK(g.consumers(r) == std::vector<Node*>{user});
  g.remove_unused_values();
  CHECK(g.find_value("body_only") == body_only);
  CHECK(quant::ir::verify(g).is_ok());
  // Nothing produces what the body reads: verify names the node and the value.
  g.remove_node(relu);
  auto st = quant::ir::verify(g);
  REQUIRE_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("subgraph reads 'r'"));
}
