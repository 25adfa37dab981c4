// If, Loop, Scan: models built as ONNX protos (bodies are GRAPH attributes),
// imported, run; bodies read outer-scope values, nested bodies included.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include "libquant/interp/session.h"
#include "libquant/io/tensor_proto.h"
#include "libquant/onnx/model_io.h"
#include "tests/onnx/proto_builders.h"

using quant::DType;
using quant::Tensor;
using namespace quant::test;

namespace {

void add_ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

void add_int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

struct Prepared {
  std::unique_ptr<quant::ir::Graph> graph;
  std::unique_ptr<quant::interp::Session> session;
};

Prepared prepare(const onnx::ModelProto& m) {
  auto g = quant::onnx_io::import_model(m, "");
  INFO(g.status().message());
  REQUIRE(g.has_value());
  Prepared p;
  p.graph = std::move(g).value();
  auto s = quant::interp::Session::create(*p.graph);
  INFO(s.status().message());
  REQUIRE(s.has_value());
  p.session = std::move(s).value();
  return p;
}

std::vector<Tensor> run_ok(const Prepared& p, const std::vector<Tensor>& inputs) {
  auto out = p.session->run(inputs);
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return *out;
}

std::vector<float> floats(const Tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}

Tensor boolean(bool b) {
  Tensor t(DType::Bool, {});
  t.data<uint8_t>()[0] = b ? 1 : 0;
  return t;
}

Tensor f32(quant::Dims shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }

// cond, x -> If: then x + one (one is an initializer of the outer graph), else x - one.
onnx::ModelProto if_model() {
  onnx::GraphProto then_g, else_g;
  add_node(&then_g, "Add", {"x", "one"}, {"then_out"});
  then_g.add_output()->set_name("then_out");
  add_node(&else_g, "Sub", {"x", "one"}, {"else_out"});
  else_g.add_output()->set_name("else_out");
  onnx::GraphProto g;
  set_type(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {2});
  quant::io::tensor_to_proto(f32({1}, {1}), "one", g.add_initializer());
  auto* n = add_node(&g, "If", {"cond"}, {"y"});
  add_graph_attr(n, "then_branch", then_g);
  add_graph_attr(n, "else_branch", else_g);
  set_type(g.add_output(), "y", onnx::TensorProto::FLOAT, {2});
  return model_with(g, 13);
}

}  // namespace

TEST_CASE("If runs the branch the condition picks, reading outer-scope values", "[interp][if]") {
  auto p = prepare(if_model());
  CHECK(floats(run_ok(p, {boolean(true), f32({2}, {1, 2})})[0]) == std::vector<float>{2, 3});
  CHECK(floats(run_ok(p, {boolean(false), f32({2}, {1, 2})})[0]) == std::vector<float>{0, 1});
  auto bad = p.session->run({f32({1}, {1}), f32({2}, {1, 2})});
  REQUIRE_FALSE(bad.has_value());
}

TEST_CASE("If round-trips through export with its branches intact", "[interp][if]") {
  auto g = quant::onnx_io::import_model(if_model(), "");
  REQUIRE(g.has_value());
  onnx::ModelProto exported;
  quant::onnx_io::export_model(**g, &exported);
  REQUIRE(exported.graph().node_size() == 1);
  const auto& node = exported.graph().node(0);
  bool found = false;
  for (const auto& a : node.attribute())
    if (a.name() == "then_branch") {
      found = true;
      CHECK(a.type() == onnx::AttributeProto::GRAPH);
      CHECK(a.g().node(0).op_type() == "Add");
    }
  CHECK(found);
  auto p = prepare(exported);
  CHECK(floats(run_ok(p, {boolean(true), f32({2}, {1, 2})})[0]) == std::vector<float>{2, 3});
}

TEST_CASE("If rejects branches whose output count differs from the node's", "[interp][if]") {
  auto m = if_model();
  auto* attr = m.mutable_graph()->mutable_node(0)->mutable_attribute(0);
  attr->mutable_g()->add_output()->set_name("x");
  auto g = quant::onnx_io::import_model(m, "");
  REQUIRE(g.has_value());
  auto s = quant::interp::Session::create(**g);
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.status().message(), Catch::Contains("If node"));
  CHECK_THAT(s.status().message(), Catch::Contains("outputs"));
}

namespace {

// M, cond, y0 -> Loop: y += x (x from the outer graph), scan output y each
// iteration; the body's cond is `keep` from the outer graph.
onnx::ModelProto loop_model() {
  onnx::GraphProto body;
  set_type(body.add_input(), "i", onnx::TensorProto::INT64, {});
  set_type(body.add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  set_type(body.add_input(), "y_in", onnx::TensorProto::FLOAT, {1});
  add_node(&body, "Identity", {"keep"}, {"cond_out"});
  add_node(&body, "Add", {"y_in", "x"}, {"y_out"});
  add_node(&body, "Identity", {"y_out"}, {"scan_out"});
  body.add_output()->set_name("cond_out");
  body.add_output()->set_name("y_out");
  set_type(body.add_output(), "scan_out", onnx::TensorProto::FLOAT, {1});
  onnx::GraphProto g;
  set_type(g.add_input(), "M", onnx::TensorProto::INT64, {});
  set_type(g.add_input(), "keep", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {1});
  quant::io::tensor_to_proto(f32({1}, {0}), "y0", g.add_initializer());
  auto* n = add_node(&g, "Loop", {"M", "", "y0"}, {"y", "scan"});
  add_graph_attr(n, "body", body);
  g.add_output()->set_name("y");
  g.add_output()->set_name("scan");
  return model_with(g, 13);
}

}  // namespace

TEST_CASE("Loop carries values, stacks scan outputs and honours M and cond", "[interp][loop]") {
  auto p = prepare(loop_model());
  Tensor m3 = Tensor::scalar<int64_t>(3);
  auto out = run_ok(p, {m3, boolean(true), f32({1}, {2})});
  CHECK(floats(out[0]) == std::vector<float>{6});
  CHECK(out[1].shape() == quant::Dims{3, 1});
  CHECK(floats(out[1]) == std::vector<float>{2, 4, 6});
  // The body's cond (false) stops after the first iteration.
  out = run_ok(p, {m3, boolean(false), f32({1}, {2})});
  CHECK(floats(out[0]) == std::vector<float>{2});
  CHECK(out[1].shape() == quant::Dims{1, 1});
  // M = 0: no iteration; the scan output is empty with the declared element shape.
  out = run_ok(p, {Tensor::scalar<int64_t>(0), boolean(true), f32({1}, {2})});
  CHECK(floats(out[0]) == std::vector<float>{0});
  CHECK(out[1].shape() == quant::Dims{0, 1});
  auto bad = p.session->run({f32({1}, {3}), boolean(true), f32({1}, {2})});
  REQUIRE_FALSE(bad.has_value());
}

TEST_CASE("Loop body with a nested If reads values two scopes out", "[interp][loop][if]") {
  // Body: y_out = If(flag) then y_in + x else y_in - x, x and flag from the top graph.
  onnx::GraphProto then_g, else_g;
  add_node(&then_g, "Add", {"y_in", "x"}, {"t"});
  then_g.add_output()->set_name("t");
  add_node(&else_g, "Sub", {"y_in", "x"}, {"e"});
  else_g.add_output()->set_name("e");
  onnx::GraphProto body;
  set_type(body.add_input(), "i", onnx::TensorProto::INT64, {});
  set_type(body.add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  body.add_input()->set_name("y_in");  // untyped, as ONNX allows
  add_node(&body, "Identity", {"cond_in"}, {"cond_out"});
  auto* inner = add_node(&body, "If", {"flag"}, {"y_out"});
  add_graph_attr(inner, "then_branch", then_g);
  add_graph_attr(inner, "else_branch", else_g);
  body.add_output()->set_name("cond_out");
  body.add_output()->set_name("y_out");
  onnx::GraphProto g;
  set_type(g.add_input(), "flag", onnx::TensorProto::BOOL, {});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {1});
  quant::io::tensor_to_proto(Tensor::scalar<int64_t>(4), "M", g.add_initializer());
  quant::io::tensor_to_proto(f32({1}, {1}), "y0", g.add_initializer());
  auto* n = add_node(&g, "Loop", {"M", "", "y0"}, {"y"});
  add_graph_attr(n, "body", body);
  g.add_output()->set_name("y");
  auto p = prepare(model_with(g, 13));
  CHECK(floats(run_ok(p, {boolean(true), f32({1}, {0.5f})})[0]) == std::vector<float>{3});
  CHECK(floats(run_ok(p, {boolean(false), f32({1}, {0.5f})})[0]) == std::vector<float>{-1});
}

TEST_CASE("A Loop whose inputs are all constant is folded at prepare time", "[interp][loop][session]") {
  // M, y0 initializers, body reads no outer value: the Loop runs once, in create.
  onnx::GraphProto body;
  set_type(body.add_input(), "i", onnx::TensorProto::INT64, {});
  set_type(body.add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  body.add_input()->set_name("y_in");
  add_node(&body, "Identity", {"cond_in"}, {"cond_out"});
  add_node(&body, "Add", {"y_in", "y_in"}, {"y_out"});
  body.add_output()->set_name("cond_out");
  body.add_output()->set_name("y_out");
  onnx::GraphProto g;
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {1});
  quant::io::tensor_to_proto(Tensor::scalar<int64_t>(3), "M", g.add_initializer());
  quant::io::tensor_to_proto(f32({1}, {1}), "y0", g.add_initializer());
  auto* n = add_node(&g, "Loop", {"M", "", "y0"}, {"k"});
  add_graph_attr(n, "body", body);
  add_node(&g, "Mul", {"x", "k"}, {"y"});
  g.add_output()->set_name("y");
  auto p = prepare(model_with(g, 13));
  CHECK(p.session->step_count() == 1);
  CHECK(floats(run_ok(p, {f32({1}, {0.5f})})[0]) == std::vector<float>{4});
}

TEST_CASE("Scan sums along an axis, forward and reverse, with output axes", "[interp][scan]") {
  // state s [2], scan input x [2, 3] along axis 1: s += x[:, t]; scan output s.
  onnx::GraphProto body;
  set_type(body.add_input(), "s_in", onnx::TensorProto::FLOAT, {2});
  set_type(body.add_input(), "col", onnx::TensorProto::FLOAT, {2});
  add_node(&body, "Add", {"s_in", "col"}, {"s_out"});
  add_node(&body, "Identity", {"s_out"}, {"scan_out"});
  body.add_output()->set_name("s_out");
  body.add_output()->set_name("scan_out");
  onnx::GraphProto g;
  set_type(g.add_input(), "s0", onnx::TensorProto::FLOAT, {2});
  set_type(g.add_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  auto* n = add_node(&g, "Scan", {"s0", "x"}, {"s", "partials"});
  add_graph_attr(n, "body", body);
  add_int_attr(n, "num_scan_inputs", 1);
  add_ints_attr(n, "scan_input_axes", {1});
  add_ints_attr(n, "scan_output_axes", {1});
  g.add_output()->set_name("s");
  g.add_output()->set_name("partials");
  auto m = model_with(g, 11);
  const Tensor x = f32({2, 3}, {1, 2, 3, 10, 20, 30});
  {
    auto p = prepare(m);
    auto out = run_ok(p, {f32({2}, {0, 0}), x});
    CHECK(floats(out[0]) == std::vector<float>{6, 60});
    CHECK(out[1].shape() == quant::Dims{2, 3});
    CHECK(floats(out[1]) == std::vector<float>{1, 3, 6, 10, 30, 60});
  }
  // Reverse input: partial sums from the end: 3, 5, 6.
  add_ints_attr(m.mutable_graph()->mutable_node(0), "scan_input_directions", {1});
  auto p = prepare(m);
  auto out = run_ok(p, {f32({2}, {0, 0}), x});
  CHECK(floats(out[1]) == std::vector<float>{3, 5, 6, 30, 50, 60});
}
