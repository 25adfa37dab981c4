// passes/subgraphs.h: every control-flow body is rewritten, innermost first,
// under its scope, and written back into its node; body_profile gives a body
// its scoped profile entries by their plain names.
#include <catch2/catch.hpp>

#include "libquant/onnx/model_io.h"
#include "libquant/passes/subgraphs.h"
#include "tests/onnx/proto_builders.h"

using namespace quant::test;

namespace {

// x -> If "gate" (then: Loop "repeat" whose body doubles acc; else: Neg x).
onnx::ModelProto nested_model() {
  onnx::GraphProto loop_body;
  set_type(loop_body.add_input(), "i", onnx::TensorProto::INT64, {});
  set_type(loop_body.add_input(), "c", onnx::TensorProto::BOOL, {});
  set_type(loop_body.add_input(), "acc", onnx::TensorProto::FLOAT, {2});
  add_node(&loop_body, "Add", {"acc", "acc"}, {"acc2"});
  add_node(&loop_body, "Identity", {"c"}, {"c2"});
  set_type(loop_body.add_output(), "c2", onnx::TensorProto::BOOL, {});
  set_type(loop_body.add_output(), "acc2", onnx::TensorProto::FLOAT, {2});
  onnx::GraphProto then_g;
  auto* loop = add_node(&then_g, "Loop", {"trips", "", "x"}, {"t"});
  loop->set_name("repeat");
  add_graph_attr(loop, "body", loop_body);
  then_g.add_output()->set_name("t");
  onnx::GraphProto else_g;
  add_node(&else_g, "Neg", {"x"}, {"e"});
  else_g.add_output()->set_name("e");
  onnx::GraphProto g;
  set_type(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {2});
  set_type(g.add_input(), "trips", onnx::TensorProto::INT64, {});
  auto* n = add_node(&g, "If", {"cond"}, {"y"});
  n->set_name("gate");
  add_graph_attr(n, "then_branch", then_g);
  add_graph_attr(n, "else_branch", else_g);
  set_type(g.add_output(), "y", onnx::TensorProto::FLOAT, {2});
  return model_with(g, 17);
}

}  // namespace

TEST_CASE("rewrite_bodies visits nested bodies first, writes them back and keeps their domains", "[passes]") {
  auto graph = quant::onnx_io::import_model(nested_model(), "");
  REQUIRE(graph);
  std::vector<std::string> scopes;
  const quant::passes::BodyPass pass = [&](quant::ir::Graph& body, const std::string& scope)
      -> quant::Expected<quant::passes::QuantizeReport> {
    scopes.push_back(scope);
    // A rewrite: one more node at the end, in a domain of its own.
    quant::ir::Value* out = body.outputs.back();
    quant::ir::Value* v = body.add_value(out->name() + "_seen");
    body.add_node("Identity", {out}, {v}, "seen");
    body.outputs.back() = v;
    body.opset_imports.try_emplace("com.example", 1);
    quant::passes::QuantizeReport r;
    r.nodes.push_back({"seen", "Identity", true, "test", 0});
    return r;
  };
  quant::passes::QuantizeReport report;
  REQUIRE(quant::passes::rewrite_bodies(**graph, pass, &report));
  // A node's bodies in attribute-name order; a nested body before its parent.
  CHECK(scopes == std::vector<std::string>{"gate/else_branch", "gate/then_branch/repeat/body", "gate/then_branch"});
  REQUIRE(report.nodes.size() == 3);
  CHECK(report.nodes[1].node == "gate/then_branch/repeat/body/seen");
  CHECK((*graph)->opset_imports.count("com.example") == 1);

  // The rewritten bodies are in the attributes: the then branch has its new
  // node, and its Loop's body too; x stays a free name of the branches.
  const quant::ir::Node& gate = *(*graph)->nodes().front();
  auto then_b = quant::onnx_io::import_subgraph(gate.find_attribute("then_branch")->s, (*graph)->opset_imports);
  REQUIRE(then_b);
  CHECK(then_b->formal_inputs == 0);
  CHECK(then_b->outer_names == std::vector<std::string>{"trips", "x"});
  REQUIRE(then_b->graph->nodes().size() == 2);
  const quant::ir::Node* loop = nullptr;
  for (const auto& n : then_b->graph->nodes())
    if (n->op_type == "Loop") loop = n.get();
  REQUIRE(loop);
  auto body = quant::onnx_io::import_subgraph(loop->find_attribute("body")->s, (*graph)->opset_imports);
  REQUIRE(body);
  CHECK(body->formal_inputs == 3);
  CHECK(body->graph->nodes().size() == 3);
  CHECK(body->graph->outputs.back()->name() == "acc2_seen");
}

TEST_CASE("body_profile gives a body its scoped entries by plain name, outer ones unchanged", "[passes]") {
  quant::profile::Profile p;
  auto entry = [](const char* tag) { return quant::profile::TensorProfile{tag, {}, quant::profile::Histogram(16)}; };
  p.tensors.emplace("x", entry("outer"));
  p.tensors.emplace("gate/then_branch/c1", entry("then"));
  p.tensors.emplace("gate/else_branch/c1", entry("else"));
  const auto then_p = quant::passes::body_profile(p, "gate/then_branch");
  CHECK(then_p.tensors.at("x").dtype == "outer");
  CHECK(then_p.tensors.at("c1").dtype == "then");
  CHECK(quant::passes::body_profile(p, "gate/else_branch").tensors.at("c1").dtype == "else");
  CHECK(quant::passes::body_profile(p, "other/body").tensors.count("c1") == 0);
}
