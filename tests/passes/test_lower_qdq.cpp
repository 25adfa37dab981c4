// Lowering of QDQ graphs (passes/lower_qdq.h): the graph it produces, the
// reasons it gives for float islands, and - for the integer forms whose
// kernels are qtool's own (QLinearLookup, integer Clip, data movement) - that
// the lowered graph computes exactly what the QDQ graph computes in float.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "libquant/interp/session.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/lower_plan.h"
#include "libquant/passes/lower_qdq.h"
#include "libquant/passes/qoperator.h"
#include "tests/passes/qdq_graph.h"

using quant::DType;
using quant::testing::run_graph;
using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;
namespace passes = quant::passes;
using quant::testing::QdqGraph;

namespace {

std::multiset<std::string> op_types(const Graph& g) {
  std::multiset<std::string> out;
  for (const auto& n : g.nodes()) out.insert((n->domain.empty() ? "" : n->domain + ".") + n->op_type);
  return out;
}

const Node* producer_of(const Graph& g, const std::string& value) {
  const Value* v = g.find_value(value);
  return v ? v->producer : nullptr;
}

passes::Lowering lower(Graph& g, passes::LowerTarget t = passes::LowerTarget::Interpreter, bool fold = true) {
  auto r = passes::lower_qdq(g, {t, nullptr, fold});
  REQUIRE(r.has_value());
  return std::move(r).value();
}

// Inputs sweeping [lo, hi] densely, so every table entry is exercised.
Tensor sweep(float lo, float hi, int64_t n = 4096) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return Tensor::from_vector<float>({1, n}, v);
}

void require_same(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  for (int64_t i = 0; i < a.size(); ++i) REQUIRE(a.as_double(i) == b.as_double(i));
}

// x -> Q/DQ -> Conv(w per channel, bias) -> Relu -> Q/DQ -> y (float output)
void build_conv_relu(QdqGraph& b, DType out_type, int32_t out_zp) {
  Value* x = b.qdq(b.input("x"), 0.05f, 128);
  Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {10, -20}), {0.01f, 0.02f}, 0);
  Value* bias = b.weight("bias", Tensor::from_vector<int32_t>({2}, {5, -5}), {0.05f * 0.01f, 0.05f * 0.02f}, 0);
  Value* c = b.op("Conv", {x, w, bias}, "c");
  Value* r = b.op("Relu", {c}, "r");
  Value* rd = b.qdq(r, 0.01f, out_zp, out_type);
  Value* y = b.op("Identity", {rd}, "y");
  b.g.outputs = {y};
}

}  // namespace

TEST_CASE("Conv + Relu implied by uint8 saturation lowers to one QLinearConv", "[passes][lower]") {
  QdqGraph b;
  build_conv_relu(b, DType::UInt8, 0);
  auto l = lower(b.g);
  const Node* conv = producer_of(b.g, "r_quantized");
  REQUIRE(conv);
  CHECK(conv->op_type == "QLinearConv");
  CHECK(conv->inputs.size() == 9);
  CHECK(conv->input(0)->name() == "x_quantized");
  CHECK(conv->input(3)->name() == "w_quantized");
  CHECK(conv->input(8)->name() == "bias_quantized");
  CHECK(op_types(b.g).count("Relu") == 0);
  CHECK(l.lowered.at("c_node") == "QLinearConv (Relu implied by saturation)");
  // Q of the input, DQ of the output for the float Identity: the only boundaries.
  CHECK(op_types(b.g) == std::multiset<std::string>{"QuantizeLinear", "QLinearConv", "DequantizeLinear", "Identity"});
}

TEST_CASE("Relu that int8 saturation does not imply becomes an integer Clip at the zero point", "[passes][lower]") {
  QdqGraph b;
  build_conv_relu(b, DType::Int8, -3);
  auto l = lower(b.g, passes::LowerTarget::Interpreter, /*fold=*/false);
  const Node* clip = producer_of(b.g, "r_quantized");
  REQUIRE(clip);
  CHECK(clip->op_type == "Clip");
  REQUIRE(clip->inputs.size() == 2);
  const Tensor* lo = quant::ir::constant_data(clip->input(1));
  REQUIRE(lo);
  CHECK(lo->dtype() == DType::Int8);
  CHECK(lo->as_int64(0) == -3);
  // The pre-activation integer tensor keeps its float twin's name.
  CHECK(clip->input(0)->name() == "c_quantized");
  CHECK(clip->input(0)->producer->op_type == "QLinearConv");
  CHECK(l.lowered.at("c_node") == "QLinearConv + integer Relu");
  auto twins = passes::find_quantized_tensors(b.g);
  std::map<std::string, std::string> twin_of;
  for (const auto& t : twins) twin_of[t.name] = t.float_name;
  CHECK(twin_of.at("c_quantized") == "c");
  CHECK(twin_of.at("r_quantized") == "r");
  CHECK(twin_of.at("x_quantized") == "x");
}

TEST_CASE("A Relu saturation does not imply folds into QLinearConv's output clamp, same bits as the Clip", "[passes][lower]") {
  QdqGraph folded, separate;
  build_conv_relu(folded, DType::Int8, -3);
  build_conv_relu(separate, DType::Int8, -3);
  auto l = lower(folded.g);
  lower(separate.g, passes::LowerTarget::Interpreter, /*fold=*/false);
  const Node* conv = producer_of(folded.g, "r_quantized");
  REQUIRE(conv);
  CHECK(conv->op_type == "QLinearConv");
  REQUIRE(conv->find_attribute("activation_min"));
  CHECK(conv->find_attribute("activation_min")->i == -3);  // Q(0) at zero point -3
  CHECK(conv->find_attribute("activation_max")->i == 127);
  CHECK(op_types(folded.g).count("Clip") == 0);
  CHECK(op_types(separate.g).count("Clip") == 1);
  CHECK(l.lowered.at("c_node") == "QLinearConv (Relu folded into the output clamp)");
  // Inputs across the whole range, negative conv outputs included: the
  // folded clamp gives the integer Clip's bits, and the Relu acts.
  std::vector<float> v(2 * 64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -6.4f + 0.1f * static_cast<float>(i);
  const Tensor x = Tensor::from_vector<float>({2, 1, 8, 8}, v);
  const auto a = run_graph(folded.g, {x}), b = run_graph(separate.g, {x});
  require_same(a[0], b[0]);
  int clamped = 0;
  for (int64_t i = 0; i < a[0].size(); ++i) clamped += a[0].as_double(i) == 0.0;
  CHECK(clamped > 0);
}

TEST_CASE("A Clip whose bounds quantize to the type's limits is implied, though scale * 255 exceeds its max", "[passes][lower]") {
  // Relu6 profiled to [0, 6]: scale = 6 / 255 in float32, and 255 * scale lands above 6 in exact arithmetic,
  // but Q(6) = round(6 / scale) = 255, so the Clip changes no quantized value.
  const float scale = 6.0f / 255.0f;
  REQUIRE(static_cast<double>(scale) * 255.0 > 6.0);
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 0.05f, 128);
  Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {10, -20}), {0.01f, 0.02f}, 0);
  Value* c = b.op("Conv", {x, w}, "c");
  Value* lo = quant::passes::add_constant(b.g, "lo", Tensor::scalar<float>(0.0f));
  Value* hi = quant::passes::add_constant(b.g, "hi", Tensor::scalar<float>(6.0f));
  Value* r = b.op("Clip", {c, lo, hi}, "r");
  b.g.outputs = {b.op("Identity", {b.qdq(r, scale, 0)}, "y")};
  auto l = lower(b.g);
  CHECK(l.lowered.at("c_node") == "QLinearConv (Clip implied by saturation)");
  CHECK(op_types(b.g).count("Clip") == 0);
}

TEST_CASE("ONNX Runtime target keeps a Relu saturation does not imply in QDQ form", "[passes][lower]") {
  QdqGraph b;
  build_conv_relu(b, DType::Int8, -3);
  auto notes = passes::emit_qoperator(b.g);
  REQUIRE(notes.has_value());
  CHECK(notes->empty());
  CHECK(op_types(b.g).count("Conv") == 1);
  CHECK(op_types(b.g).count("Relu") == 1);
}

TEST_CASE("A missing kernel leaves a float island that says so", "[passes][lower]") {
  QdqGraph b;
  build_conv_relu(b, DType::UInt8, 0);
  passes::LowerOptions o;
  o.has_kernel = [](const std::string&, const std::string& op) { return op != "QLinearConv"; };
  auto l = passes::lower_qdq(b.g, o);
  REQUIRE(l.has_value());
  CHECK(l->float_reasons.at("c_node") == "the interpreter has no kernel for QLinearConv");
  CHECK(op_types(b.g).count("Conv") == 1);
}

TEST_CASE("Unary ops become lookup tables that match DQ -> op -> Q exactly", "[passes][lower]") {
  struct Case {
    std::string op;
    DType in, out;
    int32_t in_zp, out_zp;
    float in_scale, out_scale;
  };
  for (const Case& c : {Case{"Sigmoid", DType::UInt8, DType::UInt8, 128, 0, 0.05f, 1.0f / 256},
                        Case{"Tanh", DType::Int8, DType::Int8, 3, 0, 0.04f, 1.0f / 128},
                        Case{"HardSwish", DType::UInt8, DType::Int8, 100, -20, 0.03f, 0.02f},
                        Case{"HardSigmoid", DType::Int16, DType::Int16, 0, 0, 1e-4f, 4e-5f},
                        Case{"Gelu", DType::UInt16, DType::UInt16, 30000, 1000, 2e-4f, 1e-4f}}) {
    DYNAMIC_SECTION(c.op) {
      QdqGraph lowered(21), reference(21);
      for (QdqGraph* b : {&lowered, &reference}) {
        Value* x = b->qdq(b->input("x"), c.in_scale, c.in_zp, c.in);
        Value* y = b->qdq(b->op(c.op, {x}, "y"), c.out_scale, c.out_zp, c.out);
        b->g.outputs = {b->op("Identity", {y}, "out")};
      }
      lower(lowered.g);
      const Node* lookup = producer_of(lowered.g, "y_quantized");
      REQUIRE(lookup);
      CHECK(lookup->op_type == "QLinearLookup");
      CHECK(lookup->domain == "ai.qtool");
      CHECK(lookup->attr_string("op_type", "") == c.op);
      const double span = c.in_scale * static_cast<double>(quant::int_range(c.in)->max - quant::int_range(c.in)->min);
      Tensor x = sweep(static_cast<float>(-span), static_cast<float>(span), 70000);
      const Tensor want = run_graph(reference.g, {x})[0];
      require_same(run_graph(lowered.g, {x})[0], want);
      require_same(run_graph(lowered.g, {x}, 3)[0], want);  // pieces of the gather on 3 threads
    }
  }
}

TEST_CASE("Relu and Clip with their own parameters: integer Clip when unchanged, table otherwise", "[passes][lower]") {
  for (bool same : {true, false}) {
    QdqGraph lowered, reference;
    for (QdqGraph* b : {&lowered, &reference}) {
      Value* x = b->qdq(b->input("x"), 0.02f, 120);
      Value* r = b->qdq(b->op("Relu", {x}, "r"), same ? 0.02f : 0.01f, same ? 120 : 0);  // int Clip at 120 when same
      Value* c = b->op("Clip", {r, quant::passes::add_constant(b->g, "lo", Tensor::scalar<float>(-0.5f)), quant::passes::add_constant(b->g, "hi", Tensor::scalar<float>(1.5f))}, "c");
      Value* cq = b->qdq(c, same ? 0.02f : 0.007f, same ? 120 : 77);
      b->g.outputs = {b->op("Identity", {cq}, "out")};
    }
    lower(lowered.g);
    const Node* relu = producer_of(lowered.g, "r_quantized");
    const Node* clip = producer_of(lowered.g, "c_quantized");
    REQUIRE(relu);
    REQUIRE(clip);
    CHECK(relu->op_type == (same ? "Clip" : "QLinearLookup"));
    CHECK(clip->op_type == (same ? "Clip" : "QLinearLookup"));
    Tensor x = sweep(-3, 3);
    require_same(run_graph(lowered.g, {x})[0], run_graph(reference.g, {x})[0]);
  }
}

TEST_CASE("Data movement runs on integer data; different parameters add an identity table", "[passes][lower]") {
  for (bool same : {true, false}) {
    QdqGraph lowered, reference;
    for (QdqGraph* b : {&lowered, &reference}) {
      Value* x = b->qdq(b->input("x"), 0.02f, 120);
      Value* shape = quant::passes::add_constant(b->g, "shape", Tensor::from_vector<int64_t>({4}, {1, 1, 64, 64}));
      Value* r = b->qdq(b->op("Reshape", {x, shape}, "r"), 0.02f, 120);
      Value* m = b->op("MaxPool", {r}, "m");
      b->g.nodes().back()->attributes["kernel_shape"] = quant::ir::Attribute::of_ints({2, 2});
      Value* mq = b->qdq(m, same ? 0.02f : 0.011f, same ? 120 : 3);
      Value* t = b->op("Transpose", {mq}, "t");
      Value* tq = b->qdq(t, same ? 0.02f : 0.03f, same ? 120 : 140);
      b->g.outputs = {b->op("Identity", {tq}, "out")};
    }
    lower(lowered.g);
    CHECK(producer_of(lowered.g, "r_quantized")->op_type == "Reshape");
    CHECK(producer_of(lowered.g, "m_quantized")->op_type == (same ? "MaxPool" : "QLinearLookup"));
    CHECK(producer_of(lowered.g, "t_quantized")->op_type == (same ? "Transpose" : "QLinearLookup"));
    CHECK(op_types(lowered.g).count("DequantizeLinear") == 1);
    Tensor x = sweep(-2.5f, 2.5f);
    require_same(run_graph(lowered.g, {x})[0], run_graph(reference.g, {x})[0]);
  }
}

TEST_CASE("Ops without an integer form stay float islands with a reason; explain shows the break", "[passes][lower]") {
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 0.02f, 120);
  Value* s = b.op("Hardmax", {x}, "s");
  Value* sq = b.qdq(s, 1.0f / 256, 0);
  b.g.outputs = {b.op("Sigmoid", {sq}, "out")};
  auto l = lower(b.g);
  CHECK(l.float_reasons.at("s_node") == "no integer kernel for Hardmax");
  CHECK(l.float_reasons.at("out_node") == "output 'out' is a float graph output");
  auto plan = passes::describe_plan(b.g, &l);
  REQUIRE(plan.islands.size() == 2);
  CHECK(plan.boundary_breaks() == 1);
  const auto& island = plan.islands[0];
  CHECK(island.entries == std::vector<std::string>{"x_DequantizeLinear"});
  CHECK(island.exits == std::vector<std::string>{"s_QuantizeLinear"});
  CHECK(plan.islands[1].to_graph_output);
  CHECK(plan.boundaries.size() == 4);
  const std::string text = passes::plan_to_text(plan);
  CHECK_THAT(text, Catch::Contains("quantization boundary break: integer data leaves at 'x_DequantizeLinear' and re-enters at 's_QuantizeLinear'"));
  CHECK_THAT(text, Catch::Contains("Hardmax node 's_node': no integer kernel for Hardmax"));
  auto j = passes::plan_to_json(plan);
  CHECK(j["summary"]["boundary_breaks"] == 1);
  CHECK(j["islands"][0]["nodes"][0]["reason"] == "no integer kernel for Hardmax");
}

TEST_CASE("Softmax between Q/DQ lowers to ONNX Runtime's QLinearSoftmax", "[passes][lower]") {
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 0.02f, 120);
  b.g.outputs = {b.qdq(b.op("Softmax", {x}, "s"), 1.0f / 256, 0)};
  auto l = lower(b.g);
  CHECK(l.float_reasons.count("s_node") == 0);
  const Node* q = producer_of(b.g, "s_quantized");
  REQUIRE(q != nullptr);
  CHECK(q->op_type == "QLinearSoftmax");
  CHECK(q->domain == "com.microsoft");
  CHECK(q->attr_int("opset", 0) == b.g.opset());
  // A target whose Softmax is not ONNX Runtime's keeps it float between Q/DQ.
  QdqGraph t;
  Value* tx = t.qdq(t.input("x"), 0.02f, 120);
  t.g.outputs = {t.qdq(t.op("Softmax", {tx}, "s"), 1.0f / 256, 0)};
  passes::LowerOptions o;
  o.onnxruntime_softmax = false;
  auto lt = passes::lower_qdq(t.g, o);
  REQUIRE(lt);
  CHECK(lt->float_reasons.at("s_node") == "the target's integer Softmax is not ONNX Runtime's QLinearSoftmax: float between Q/DQ");
}

TEST_CASE("Gemm lowers to QGemm, with a float output at the end of a model", "[passes][lower]") {
  for (bool quantized_out : {true, false}) {
    QdqGraph b;
    Value* a = b.qdq(b.input("a"), 0.05f, 128);
    Value* w = b.weight("w", Tensor::from_vector<int8_t>({3, 2}, {1, 2, 3, 4, 5, 6}), {0.1f, 0.2f, 0.3f}, 0);
    Value* c = b.weight("c", Tensor::from_vector<int32_t>({3}, {1, 2, 3}), {0.005f, 0.01f, 0.015f}, 0);
    Value* y = b.op("Gemm", {a, w, c}, "y");
    b.g.nodes().back()->attributes["transB"] = quant::ir::Attribute::of_int(1);
    b.g.outputs = {quantized_out ? b.op("Identity", {b.qdq(y, 0.1f, 10)}, "out") : y};
    lower(b.g);
    const Node* q = producer_of(b.g, quantized_out ? "y_quantized" : "y");
    REQUIRE(q);
    CHECK(q->op_type == "QGemm");
    CHECK(q->domain == "com.microsoft");
    CHECK(q->inputs.size() == (quantized_out ? 9u : 7u));
    CHECK(q->attr_int("transB", 0) == 1);
    CHECK(b.g.opset("com.microsoft") == 1);
  }
}

TEST_CASE("Per-channel weights along an axis the integer op cannot take stay float", "[passes][lower]") {
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 0.05f, 128);
  Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 2}, {1, 2, 3, 4}), {0.1f, 0.2f}, 0);
  Value* y = b.qdq(b.op("MatMul", {x, w}, "y"), 0.1f, 10);
  b.g.outputs = {b.op("Identity", {y}, "out")};
  auto l = lower(b.g);
  CHECK(l.float_reasons.at("y_node") == "weight 'w_dequantized' is quantized per channel along axis 0, which QLinearMatMul does not take");
}

TEST_CASE("16-bit activations: tables and data movement lower, QLinear ops stay float", "[passes][lower]") {
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 1e-4f, 0, DType::Int16);
  Value* y = b.qdq(b.op("Add", {x, x}, "y"), 1e-4f, 0, DType::Int16);
  Value* f = b.qdq(b.op("Flatten", {y}, "f"), 1e-4f, 0, DType::Int16);
  b.g.outputs = {b.op("Identity", {f}, "out")};
  auto l = lower(b.g);
  CHECK(l.float_reasons.at("y_node") == "input 'x_dequantized' is int16; the integer Add takes 8-bit tensors");
  // Shape reads the integer tensor, so no DequantizeLinear stays for it.
  QdqGraph s;
  Value* sx = s.qdq(s.input("x"), 0.1f, 0);
  s.g.outputs = {s.op("Shape", {sx}, "shape")};
  auto ls = lower(s.g);
  CHECK(ls.lowered.at("shape_node") == "Shape of the integer tensor");
  CHECK(op_types(s.g) == std::multiset<std::string>{"QuantizeLinear", "Shape"});
  CHECK(producer_of(b.g, "f_quantized")->op_type == "Flatten");
}

TEST_CASE("Add of a uint8 and an int8 input stays float: QLinearAdd takes one type", "[passes][lower]") {
  // symmetric-uint8 (openvino-cpu): a Relu output is uint8, the other input int8.
  QdqGraph b;
  Value* a = b.qdq(b.input("a"), 0.02f, 0, DType::UInt8);
  Value* c = b.qdq(b.input("c"), 0.02f, 0, DType::Int8);
  Value* y = b.qdq(b.op("Add", {a, c}, "y"), 0.04f, 0, DType::Int8);
  b.g.outputs = {b.op("Identity", {y}, "out")};
  auto l = lower(b.g);
  CHECK(l.float_reasons.at("y_node") == "inputs and output have different integer types (QLinearAdd takes one type for all of them)");
  // A pool from int8 to uint8 (a non-negative mean) and a Concat of both types too.
  QdqGraph p;
  Value* px = p.qdq(p.input("x"), 0.02f, 0, DType::Int8);
  Value* pool = p.qdq(p.op("GlobalAveragePool", {px}, "pool"), 0.01f, 0, DType::UInt8);
  Value* u = p.qdq(p.input("u"), 0.01f, 0, DType::UInt8);
  Value* cat = p.qdq(p.op("Concat", {pool, u, px}, "cat"), 0.02f, 0, DType::Int8);
  p.g.outputs = {p.op("Identity", {cat}, "out")};
  for (const auto& node : p.g.nodes())
    if (node->op_type == "Concat") node->attributes["axis"] = quant::ir::Attribute::of_int(0);
  auto lp = lower(p.g);
  CHECK(lp.float_reasons.at("pool_node") == "inputs and output have different integer types (QLinearGlobalAveragePool takes one type for all of them)");
  CHECK(lp.float_reasons.at("cat_node") == "inputs and output have different integer types (QLinearConcat takes one type for all of them)");
  // And the graph still runs: 1.0 + -0.5 = 0.5 = 12.5 steps of 0.04, rounded half to even: 12.
  auto out = run_graph(b.g, {Tensor::scalar<float>(1.0f), Tensor::scalar<float>(-0.5f)});
  CHECK(out[0].data<float>()[0] == Approx(0.48f));
}

TEST_CASE("16-bit Conv / MatMul / Gemm lower to int64 integer ops only with wide_products", "[passes][lower][wide]") {
  auto build = [](QdqGraph& b, DType out_type) {
    Value* x = b.qdq(b.input("x"), 1e-4f, 0, DType::Int16);
    Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {10, -20}), {0.01f, 0.02f}, 0);
    Value* c = b.qdq(b.op("Conv", {x, w}, "c"), 1e-3f, 0, out_type);
    Value* m = b.weight("m", Tensor::from_vector<int8_t>({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), {0.1f}, 0);
    Value* r = b.op("Reshape", {c, passes::add_constant(b.g, "shape", Tensor::from_vector<int64_t>({2}, {1, 4}))}, "r");
    Value* mm = b.qdq(b.op("MatMul", {r, m}, "mm"), 1e-3f, 0, out_type);
    b.g.outputs = {b.op("Identity", {mm}, "out")};
  };
  QdqGraph off;
  build(off, DType::Int16);
  auto l_off = lower(off.g);
  CHECK(l_off.float_reasons.at("c_node") == "input 'x_dequantized' is int16; the integer Conv takes 8-bit tensors");
  QdqGraph on;
  build(on, DType::Int16);
  passes::LowerOptions o;
  o.wide_products = true;
  auto l_on = passes::lower_qdq(on.g, o);
  REQUIRE(l_on);
  CHECK(l_on->lowered.at("c_node") == "QLinearConv");
  CHECK(producer_of(on.g, "c_quantized")->op_type == "QLinearConv");
  // A 16-bit input with an 8-bit output is no product the kernels write.
  QdqGraph mixed;
  build(mixed, DType::UInt8);
  auto l_mixed = passes::lower_qdq(mixed.g, o);
  REQUIRE(l_mixed);
  CHECK(l_mixed->float_reasons.at("c_node") ==
        "input is int16 and output 'c' uint8: the 16-bit integer Conv writes its input's type");
  // ONNX has no 16-bit QLinear ops: qconvert's QOperator lowering ignores the option.
  QdqGraph ort;
  build(ort, DType::Int16);
  o.target = passes::LowerTarget::OnnxRuntime;
  auto l_ort = passes::lower_qdq(ort.g, o);
  REQUIRE(l_ort);
  CHECK(!l_ort->lowered.count("c_node"));
}

TEST_CASE("The lowering marks what ONNX Runtime's own graph rewrites decide for a saturating target", "[passes][lower]") {
  // qdq_fused: the int8 activation's Q -> DQ pair is one ONNX Runtime
  // rewrites to uint8 (the Q feeds that DQ alone); qdq_runtime_float: a
  // Conv whose Relu the Q does not imply, which ONNX Runtime runs in float.
  auto attr = [](const Node* n, const char* key) {
    const quant::ir::Attribute* a = n ? n->find_attribute(key) : nullptr;
    return a ? a->i : 0;
  };
  // int8 x -> Conv -> Relu -> Q (int8, zero point zp), lowered: the QLinearConv.
  auto conv_relu = [](QdqGraph& b, int32_t zp) {
    Value* x = b.qdq(b.input("x"), 0.05f, 0, DType::Int8);
    Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {10, -20}), {0.01f, 0.02f}, 0);
    Value* r = b.op("Relu", {b.op("Conv", {x, w}, "c")}, "r");
    b.g.outputs = {b.op("Identity", {b.qdq(r, 0.01f, zp, DType::Int8)}, "y")};
    lower(b.g);
    const Node* conv = producer_of(b.g, "r_quantized");
    REQUIRE(conv);
    CHECK(conv->op_type == "QLinearConv");
    return conv;
  };
  SECTION("int8, Relu not implied (zero point -3): the Conv stays float there, its pair is rewritten") {
    QdqGraph b;
    const Node* conv = conv_relu(b, -3);
    CHECK(attr(conv, "qdq_fused") == 1);
    CHECK(attr(conv, "qdq_runtime_float") == 1);
  }
  SECTION("the same Relu implied (zero point -128): fused") {
    QdqGraph b;
    CHECK(attr(conv_relu(b, -128), "qdq_runtime_float") == 0);
  }
  SECTION("a Gemm before a Relu the Q does not imply is fused all the same") {
    QdqGraph b;
    Value* a = b.qdq(b.input("a"), 0.05f, 0, DType::Int8);
    Value* w = b.weight("w", Tensor::from_vector<int8_t>({3, 2}, {1, 2, 3, 4, 5, 6}), {0.1f, 0.2f, 0.3f}, 0);
    Value* y = b.op("Gemm", {a, w}, "g");
    b.g.nodes().back()->attributes["transB"] = quant::ir::Attribute::of_int(1);
    b.g.outputs = {b.op("Identity", {b.qdq(b.op("Relu", {y}, "r"), 0.1f, 0, DType::Int8)}, "out")};
    lower(b.g);
    const Node* g = nullptr;
    for (const auto& n : b.g.nodes())
      if (n->op_type == "QGemm") g = n.get();
    REQUIRE(g);
    CHECK(attr(g, "qdq_fused") == 1);
    CHECK(attr(g, "qdq_runtime_float") == 0);
  }
  SECTION("an int8 Q read by two DQs is not rewritten") {
    QdqGraph b;
    Value* xq = b.qdq(b.input("x"), 0.05f, 0, DType::Int8);
    // A second DQ of the same Q output.
    Node* dq = xq->producer;
    Value* d2 = b.value("x_dequantized2");
    b.g.add_node("DequantizeLinear", {dq->inputs[0], dq->inputs[1], dq->inputs[2]}, {d2}, "dq2");
    Value* w1 = b.weight("w1", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {10, -20}), {0.01f, 0.02f}, 0);
    Value* w2 = b.weight("w2", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {30, -40}), {0.01f, 0.02f}, 0);
    Value* c1 = b.qdq(b.op("Conv", {xq, w1}, "c1"), 0.01f, 0, DType::Int8);
    Value* c2 = b.qdq(b.op("Conv", {d2, w2}, "c2"), 0.01f, 0, DType::Int8);
    b.g.outputs = {b.op("Identity", {c1}, "y1"), b.op("Identity", {c2}, "y2")};
    lower(b.g);
    for (const char* v : {"c1_quantized", "c2_quantized"}) {
      const Node* conv = producer_of(b.g, v);
      REQUIRE(conv);
      CHECK(conv->op_type == "QLinearConv");
      CHECK(attr(conv, "qdq_fused") == 0);
    }
  }
}

TEST_CASE("uint8_weights_where_u8s8 moves int8 weights ONNX Runtime would multiply u8 x s8 to uint8 + 128", "[passes][qoperator]") {
  // int8 activations in QDQ form (rewritten to uint8 by ONNX Runtime): a
  // regular Conv's weight moves, a depthwise one's stays (16-bit multiplies);
  // the values dequantize to the same floats.
  QdqGraph b;
  Value* x = b.qdq(b.input("x"), 0.05f, 0, DType::Int8);
  Value* w = b.weight("w", Tensor::from_vector<int8_t>({2, 2, 1, 1}, {10, -20, 127, -127}), {0.01f, 0.02f}, 0);
  Value* c = b.qdq(b.op("Conv", {x, w}, "c"), 0.1f, 0, DType::Int8);
  Value* dw = b.weight("dw", Tensor::from_vector<int8_t>({2, 1, 1, 1}, {5, -6}), {0.01f, 0.02f}, 0);
  Value* d = b.op("Conv", {c, dw}, "d");
  b.g.nodes().back()->attributes["group"] = quant::ir::Attribute::of_int(2);
  b.g.outputs = {b.op("Identity", {b.qdq(d, 0.1f, 0, DType::Int8)}, "y")};
  const std::vector<float> v = {0.5f, -1.0f, 2.0f, -0.25f};
  const Tensor in = Tensor::from_vector<float>({1, 2, 1, 2}, v);
  const auto before = run_graph(b.g, {in});
  const auto changed = passes::uint8_weights_where_u8s8(b.g);
  CHECK(changed == std::vector<std::string>{"w_quantized"});
  const Tensor* wq = quant::ir::constant_data(b.g.find_value("w_quantized"));
  REQUIRE(wq->dtype() == DType::UInt8);
  CHECK(wq->as_int64(2) == 255);
  CHECK(wq->as_int64(3) == 1);
  CHECK(quant::ir::constant_data(b.g.find_value("w_zero_point"))->as_int64(0) == 128);
  CHECK(quant::ir::constant_data(b.g.find_value("dw_quantized"))->dtype() == DType::Int8);
  require_same(before[0], run_graph(b.g, {in})[0]);
}
