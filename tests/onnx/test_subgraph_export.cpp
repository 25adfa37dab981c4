// export_subgraph is import_subgraph's inverse: a body rewritten by a pass
// (passes/subgraphs.h) goes back into its node's attribute with outer-scope
// names free again, its formal inputs, initializers and nested bodies kept.
#include <catch2/catch.hpp>

#include "libquant/io/tensor_proto.h"
#include "libquant/onnx/model_io.h"
#include "tests/onnx/proto_builders.h"

using namespace quant::test;

namespace {

// A Loop-style body: formal inputs (i, cond_in, acc), an initializer `step`,
// the outer-scope value `scale` read directly and `bias` read only inside a
// nested If's branch.
onnx::GraphProto body() {
  onnx::GraphProto inner;
  add_node(&inner, "Add", {"prod", "bias"}, {"biased"});
  inner.add_output()->set_name("biased");
  onnx::GraphProto g;
  g.set_name("loop_body");
  set_type(g.add_input(), "i", onnx::TensorProto::INT64, {});
  set_type(g.add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "acc", onnx::TensorProto::FLOAT, {2});
  *g.add_initializer() = [] {
    onnx::TensorProto t;
    t.set_name("step");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(2);
    t.add_float_data(0.5f);
    t.add_float_data(-1.0f);
    return t;
  }();
  add_node(&g, "Mul", {"acc", "scale"}, {"prod"});
  auto* n = add_node(&g, "If", {"cond_in"}, {"next"});
  add_graph_attr(n, "then_branch", inner);
  add_graph_attr(n, "else_branch", inner);
  add_node(&g, "Add", {"next", "step"}, {"acc_out"});
  add_node(&g, "Identity", {"cond_in"}, {"cond_out"});
  set_type(g.add_output(), "cond_out", onnx::TensorProto::BOOL, {});
  set_type(g.add_output(), "acc_out", onnx::TensorProto::FLOAT, {2});
  return g;
}

}  // namespace

TEST_CASE("export_subgraph round-trips an imported body, outer names free", "[onnx]") {
  const std::string bytes = body().SerializeAsString();
  const std::map<std::string, int64_t> opsets{{"", 17}};
  auto sub = quant::onnx_io::import_subgraph(bytes, opsets);
  REQUIRE(sub);
  CHECK(sub->formal_inputs == 3);
  CHECK(sub->outer_names == std::vector<std::string>{"scale", "bias"});
  auto out = quant::onnx_io::export_subgraph(*sub);
  REQUIRE(out);

  onnx::GraphProto gp;
  REQUIRE(gp.ParseFromString(*out));
  // Only the formal inputs are inputs; scale and bias are free names again.
  REQUIRE(gp.input_size() == 3);
  CHECK(gp.input(0).name() == "i");
  CHECK(gp.input(2).name() == "acc");
  CHECK(gp.input(2).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT);
  REQUIRE(gp.initializer_size() == 1);
  auto step = quant::io::tensor_from_proto(gp.initializer(0), "");
  REQUIRE(step);
  CHECK(step->data<float>()[1] == -1.0f);
  REQUIRE(gp.output_size() == 2);
  CHECK(gp.output(1).name() == "acc_out");
  CHECK(gp.node_size() == 4);

  // Import again: the same body (free names, formal inputs), and a second
  // export writes the same bytes.
  auto again = quant::onnx_io::import_subgraph(*out, opsets);
  REQUIRE(again);
  CHECK(again->formal_inputs == sub->formal_inputs);
  CHECK(again->outer_names == sub->outer_names);
  CHECK(again->graph->nodes().size() == sub->graph->nodes().size());
  auto out2 = quant::onnx_io::export_subgraph(*again);
  REQUIRE(out2);
  CHECK(*out2 == *out);
}

TEST_CASE("a model whose If branch went through export_subgraph imports with its outer name resolved", "[onnx]") {
  // The exported branch replaces the original in the If node; the model
  // re-imports (verify: every name defined, outer names resolved).
  onnx::GraphProto then_g;
  add_node(&then_g, "Mul", {"x", "x"}, {"t"});
  then_g.add_output()->set_name("t");
  onnx::GraphProto else_g;
  add_node(&else_g, "Neg", {"x"}, {"e"});
  else_g.add_output()->set_name("e");
  auto sub = quant::onnx_io::import_subgraph(then_g.SerializeAsString(), {{"", 17}});
  REQUIRE(sub);
  auto bytes = quant::onnx_io::export_subgraph(*sub);
  REQUIRE(bytes);
  REQUIRE(then_g.ParseFromString(*bytes));
  onnx::GraphProto g;
  set_type(g.add_input(), "c", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {2});
  auto* n = add_node(&g, "If", {"c"}, {"y"});
  add_graph_attr(n, "then_branch", then_g);
  add_graph_attr(n, "else_branch", else_g);
  set_type(g.add_output(), "y", onnx::TensorProto::FLOAT, {2});
  auto m = quant::onnx_io::import_model(model_with(g, 17), "");
  REQUIRE(m);
  CHECK((*m)->nodes().front()->implicit_inputs.size() == 1);
}
