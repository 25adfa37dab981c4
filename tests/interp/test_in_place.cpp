// In-place kernels (Kernel::may_overwrite_input, PlanOptions::in_place): a
// kernel handed an input's tensor as its output computes the same bits as with
// a separate output, on every path (float32 fast paths, broadcasting, half
// types, integers), and keeps that input's memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "libquant/interp/kernel.h"
#include "libquant/interp/session.h"
#include "libquant/kernels/cast.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::interp::Kernel;

namespace {

Tensor random_tensor(DType type, Dims shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Tensor t(type, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) {
    const float v = normal(rng);
    switch (type) {
      case DType::Float32: t.data<float>()[i] = v; break;
      case DType::Float16: t.data<uint16_t>()[i] = quant::kernels::float_to_half(v); break;
      case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(v * 10); break;
      default: FAIL("type not covered");
    }
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

// One node's kernel, created as the Session would.
struct OneNode {
  quant::ir::Graph g;
  std::unique_ptr<Kernel> kernel;

  OneNode(const std::string& op, size_t inputs, int64_t opset = 13,
          std::map<std::string, quant::ir::Attribute> attributes = {}) {
    g.opset_imports[""] = opset;
    std::vector<quant::ir::Value*> ins;
    for (size_t i = 0; i < inputs; ++i) ins.push_back(g.add_value("in" + std::to_string(i)));
    quant::ir::Node* n = g.add_node(op, ins, {g.add_value("out")}, "node");
    n->attributes = std::move(attributes);
    auto k = quant::interp::find_kernel_factory("", op)(quant::interp::KernelContext{*n, opset, &g, {}});
    INFO(k.status().message());
    REQUIRE(k.has_value());
    kernel = std::move(k).value();
  }
};

// Runs `node` on `inputs` with a separate output, then with input k's tensor
// as the output (where the kernel allows it), and compares.
void check_in_place(const OneNode& node, const std::vector<Tensor>& inputs, size_t k) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(t.empty() ? nullptr : &t);
  std::vector<Tensor> want(1);
  REQUIRE(node.kernel->run(ptrs, want).is_ok());
  REQUIRE(node.kernel->may_overwrite_input(k));
  REQUIRE(want[0].size() == inputs[k].size());
  std::vector<Tensor> got(1);
  got[0] = inputs[k];  // the Session moves the input's tensor into the output
  const void* memory = got[0].raw();
  ptrs[k] = &got[0];
  INFO("input " << k);
  REQUIRE(node.kernel->run(ptrs, got).is_ok());
  CHECK(same_bits(got[0], want[0]));
  // The half paths compute in float32 and narrow into a new tensor.
  if (got[0].dtype() != DType::Float16) CHECK(got[0].raw() == memory);
}

}  // namespace

TEST_CASE("in place: unary ops and Clip give the bits of a separate output", "[interp][in_place]") {
  for (DType type : {DType::Float32, DType::Float16, DType::Int32}) {
    INFO("type " << static_cast<int>(type));
    const Tensor x = random_tensor(type, {2, 3, 37}, 1);
    check_in_place(OneNode("Relu", 1, 14), {x}, 0);
    check_in_place(OneNode("Abs", 1), {x}, 0);
    if (type != DType::Int32) check_in_place(OneNode("Sigmoid", 1), {x}, 0);
    // Clip with both bounds, with only a max, and without bounds.
    const Tensor lo = random_tensor(type, {}, 2), hi = random_tensor(type, {}, 3);
    check_in_place(OneNode("Clip", 3), {x, lo, hi}, 0);
    check_in_place(OneNode("Clip", 3), {x, Tensor(), hi}, 0);
    check_in_place(OneNode("Clip", 1), {x}, 0);
  }
  // Clip before opset 11: bounds as attributes.
  const OneNode clip6("Clip", 1, 6,
                      {{"min", quant::ir::Attribute::of_float(0.0f)}, {"max", quant::ir::Attribute::of_float(6.0f)}});
  check_in_place(clip6, {random_tensor(DType::Float32, {100}, 4)}, 0);
}

TEST_CASE("in place: Add/Sub/Mul/Div over either input, same shapes and broadcast", "[interp][in_place]") {
  for (const std::string op : {"Add", "Sub", "Mul", "Div"}) {
    for (DType type : {DType::Float32, DType::Float16, DType::Int32}) {
      INFO(op << " type " << static_cast<int>(type));
      if (op == "Div" && type == DType::Int32) continue;  // random divisors may be 0
      const OneNode node(op, 2);
      const Tensor a = random_tensor(type, {2, 3, 37}, 5), b = random_tensor(type, {2, 3, 37}, 6);
      check_in_place(node, {a, b}, 0);  // add_f32 for float32 Add
      check_in_place(node, {a, b}, 1);
      // The full-shape operand overwritten, the other broadcast.
      const Tensor row = random_tensor(type, {37}, 7), col = random_tensor(type, {3, 1}, 8);
      check_in_place(node, {a, row}, 0);
      check_in_place(node, {col, a}, 1);
      // Same element count, fewer dimensions: the output has the other's rank.
      const Tensor flat = random_tensor(type, {3, 37}, 9), lifted = random_tensor(type, {1, 3, 37}, 10);
      check_in_place(node, {flat, lifted}, 0);
    }
  }
}

TEST_CASE("in place: kernels that are not element-wise never overwrite an input", "[interp][in_place]") {
  for (const char* op : {"MatMul", "Transpose", "Softmax", "Where", "Gemm"}) {
    OneNode node(op, 2);
    INFO(op);
    CHECK_FALSE(node.kernel->may_overwrite_input(0));
    CHECK_FALSE(node.kernel->may_overwrite_input(1));
  }
}

TEST_CASE("an Add planned in place runs out of place when a later run broadcasts wider", "[interp][memory_plan]") {
  // y = Relu(Add(Relu(a), b)), untyped: the first run (a, b both [1,4]) plans
  // the Add in place over Relu(a); a later run with b [3,4] broadcasts Relu(a)
  // to [3,4], so the Add must not write into Relu(a)'s [1,4] tensor.
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  quant::ir::Value* a = g.add_value("a");
  quant::ir::Value* b = g.add_value("b");
  quant::ir::Value* r = g.add_value("r");
  quant::ir::Value* s = g.add_value("s");
  quant::ir::Value* y = g.add_value("y");
  g.inputs = {a, b};
  g.add_node("Relu", {a}, {r}, "relu_a");
  g.add_node("Add", {r, b}, {s}, "add");
  g.add_node("Relu", {s}, {y}, "relu_s");
  g.outputs = {y};
  auto session = quant::interp::Session::create(g);
  REQUIRE(session.has_value());
  const Tensor x = Tensor::from_vector<float>({1, 4}, {-1.0f, 2.0f, -3.0f, 4.0f});
  for (int64_t rows : {1, 3, 1, 3}) {
    std::vector<float> bv(static_cast<size_t>(rows * 4));
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) - 5.0f;
    const Tensor bt = Tensor::from_vector<float>({rows, 4}, bv);
    auto out = (*session)->run(std::vector<Tensor>{x, bt});
    REQUIRE(out.has_value());
    REQUIRE((*out)[0].shape() == Dims{rows, 4});
    for (int64_t i = 0; i < rows * 4; ++i) {
      const float want = std::max(0.0f, std::max(0.0f, x.data<float>()[i % 4]) + bv[static_cast<size_t>(i)]);
      INFO("rows " << rows << " element " << i);
      CHECK((*out)[0].data<float>()[i] == want);
    }
  }
  // The plan did put the Add over Relu(a).
  bool planned = false;
  for (const auto& p : (*session)->memory_plan()) planned = planned || (p.value == s && p.takes_over == r);
  CHECK(planned);
}

TEST_CASE("in place: Reshape, Flatten, Squeeze and Unsqueeze only change the shape", "[interp][in_place]") {
  const Tensor x = random_tensor(DType::Float32, {2, 1, 3, 37}, 11);
  Tensor shape(DType::Int64, {2});
  shape.data<int64_t>()[0] = 6;
  shape.data<int64_t>()[1] = -1;
  Tensor axes(DType::Int64, {1});
  axes.data<int64_t>()[0] = 1;
  const auto check = [](const OneNode& node, const std::vector<Tensor>& inputs) {
    INFO(node.g.nodes().front()->op_type);
    CHECK(node.kernel->reshapes_input());
    CHECK_FALSE(node.kernel->may_overwrite_input(1));
    check_in_place(node, inputs, 0);
  };
  check(OneNode("Reshape", 2), {x, shape});
  check(OneNode("Flatten", 1), {x});
  check(OneNode("Squeeze", 2), {x, axes});
  check(OneNode("Unsqueeze", 2), {x, axes});
  // Element-wise kernels are not reshapes (their other inputs broadcast).
  CHECK_FALSE(OneNode("Relu", 1, 14).kernel->reshapes_input());
  CHECK_FALSE(OneNode("Add", 2).kernel->reshapes_input());
}
