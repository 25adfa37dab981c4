// Values read only inside If/Loop/Scan bodies: a body names them without the
// node listing them as inputs, so passes must see those reads (the node's
// implicit inputs) or they drop an initializer the body needs, or rewrite a
// value the body reads.
#include <catch2/catch.hpp>

#include "libquant/interp/fold.h"
#include "libquant/interp/session.h"
#include "libquant/io/tensor_proto.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/prepare.h"
#include "tests/onnx/proto_builders.h"

using quant::DType;
using quant::Tensor;
using namespace quant::test;

namespace {

Tensor f32(quant::Dims shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }

Tensor boolean(bool b) {
  Tensor t(DType::Bool, {});
  t.data<uint8_t>()[0] = b ? 1 : 0;
  return t;
}

// x [1,1,2,2] -> Conv(w) -> c -> BatchNormalization -> y (output 0);
// z = If(cond) then c + offset else y (output 1). `offset` is an initializer
// only the then-branch reads, and c is read by the BatchNormalization and,
// inside the then-branch, by the If.
onnx::ModelProto model() {
  onnx::GraphProto then_g, else_g;
  add_node(&then_g, "Add", {"c", "offset"}, {"t"});
  then_g.add_output()->set_name("t");
  add_node(&else_g, "Identity", {"y"}, {"e"});
  else_g.add_output()->set_name("e");
  onnx::GraphProto g;
  set_type(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
  quant::io::tensor_to_proto(f32({2, 1, 1, 1}, {2, -1}), "w", g.add_initializer());
  quant::io::tensor_to_proto(f32({2}, {2, 0.5f}), "gamma", g.add_initializer());
  quant::io::tensor_to_proto(f32({2}, {0.1f, 0.2f}), "beta", g.add_initializer());
  quant::io::tensor_to_proto(f32({2}, {1, -2}), "mean", g.add_initializer());
  quant::io::tensor_to_proto(f32({2}, {4, 0.25f}), "var", g.add_initializer());
  quant::io::tensor_to_proto(f32({1}, {10}), "offset", g.add_initializer());
  add_node(&g, "Conv", {"x", "w"}, {"c"});
  add_node(&g, "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  auto* n = add_node(&g, "If", {"cond"}, {"z"});
  add_graph_attr(n, "then_branch", then_g);
  add_graph_attr(n, "else_branch", else_g);
  g.add_output()->set_name("y");
  g.add_output()->set_name("z");
  return model_with(g, 13);
}

std::vector<Tensor> run(const quant::ir::Graph& g, bool cond) {
  auto s = quant::interp::Session::create(g);
  INFO(s.status().message());
  REQUIRE(s.has_value());
  auto out = (*s)->run({boolean(cond), f32({1, 1, 2, 2}, {1, 2, 3, 4})});
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return std::move(out).value();
}

std::vector<float> floats(const Tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("import records the values a subgraph reads as the node's implicit inputs", "[passes][subgraph]") {
  auto g = quant::onnx_io::import_model(model(), "");
  REQUIRE(g.has_value());
  const quant::ir::Node* if_node = nullptr;
  for (const auto& n : (*g)->nodes())
    if (n->op_type == "If") if_node = n.get();
  REQUIRE(if_node);
  std::vector<std::string> names;
  for (const auto* v : if_node->implicit_inputs) names.push_back(v->name());
  CHECK(names == std::vector<std::string>{"c", "offset", "y"});
  CHECK((*g)->consumers((*g)->find_value("c")).size() == 2);
}

TEST_CASE("graph preparation keeps what subgraphs read and does not rewrite it", "[passes][subgraph]") {
  auto original = quant::onnx_io::import_model(model(), "");
  REQUIRE(original.has_value());
  const auto then_ref = run(**original, true), else_ref = run(**original, false);

  auto g = quant::onnx_io::import_model(model(), "");
  REQUIRE(g.has_value());
  quant::passes::constants_to_initializers(**g);
  REQUIRE(quant::interp::fold_constants(**g).has_value());
  std::vector<std::string> notes;
  REQUIRE(quant::passes::fold_batchnorm(**g, notes).is_ok());
  // c is also read by the then-branch: folding the BatchNormalization into the
  // Conv would change what the branch sees.
  CHECK(notes.empty());
  REQUIRE((*g)->find_value("offset") != nullptr);

  // Through export and import, as qconvert writes it.
  onnx::ModelProto exported;
  quant::onnx_io::export_model(**g, &exported);
  auto back = quant::onnx_io::import_model(exported, "");
  INFO(back.status().message());
  REQUIRE(back.has_value());
  CHECK(floats(run(**back, true)[1]) == floats(then_ref[1]));
  CHECK(floats(run(**back, false)[1]) == floats(else_ref[1]));
  CHECK(floats(run(**back, true)[0]) == floats(then_ref[0]));
}

TEST_CASE("a subgraph reading a value the graph does not define is refused at import", "[passes][subgraph]") {
  onnx::ModelProto m = model();
  auto* then_g = m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_input(1, "nowhere");
  auto g = quant::onnx_io::import_model(m, "");
  REQUIRE_FALSE(g.has_value());
  CHECK_THAT(g.status().message(), Catch::Contains("subgraph reads 'nowhere'"));
}
