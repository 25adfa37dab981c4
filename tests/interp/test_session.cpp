// Session behaviour beyond single ops: prepare-time constant folding (and what
// the observer sees), and one session serving several batch sizes.
#include <catch2/catch.hpp>

#include <set>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;

namespace {

// x [batch, 2] (batch dynamic) -> Gemm(x, Wt, b) -> Reshape(shape) -> y [batch, 3]
// where Wt = Transpose(Constant W [3, 2]) and shape = Constant [-1, 3]: the
// Constant -> Transpose chain and the shape are foldable, Gemm and Reshape are not.
struct DynamicBatchModel {
  quant::ir::Graph g;
  quant::ir::Value* x;
  quant::ir::Value* wt;
  quant::ir::Value* y;

  DynamicBatchModel() {
    g.opset_imports[""] = 13;
    x = g.add_value("x");
    x->dtype = DType::Float32;
    x->has_shape = true;
    x->shape = {-1, 2};
    x->dim_names = {"batch", ""};
    g.inputs.push_back(x);
    auto* w = g.add_value("w");
    auto* cw = g.add_node("Constant", {}, {w}, "const_w");
    cw->attributes["value"] = Attribute::of_tensor(Tensor::from_vector<float>({3, 2}, {1, 0, 0, 1, 1, 1}));
    wt = g.add_value("wt");
    auto* tr = g.add_node("Transpose", {w}, {wt}, "transpose_w");
    tr->attributes["perm"] = Attribute::of_ints({1, 0});
    auto* b = g.add_value("b");
    b->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({3}, {10, 20, 30}));
    auto* gemm_out = g.add_value("gemm_out");
    g.add_node("Gemm", {x, wt, b}, {gemm_out}, "gemm");
    auto* shape = g.add_value("shape");
    auto* cs = g.add_node("Constant", {}, {shape}, "const_shape");
    cs->attributes["value"] = Attribute::of_tensor(Tensor::from_vector<int64_t>({2}, {-1, 3}));
    y = g.add_value("y");
    g.add_node("Reshape", {gemm_out, shape}, {y}, "reshape");
    g.outputs.push_back(y);
  }
};

// Rows [a, b] -> [a + 10, b + 20, a + b + 30].
std::vector<float> expected_rows(const std::vector<float>& x) {
  std::vector<float> y;
  for (size_t i = 0; i + 1 < x.size(); i += 2) {
    y.push_back(x[i] + 10);
    y.push_back(x[i + 1] + 20);
    y.push_back(x[i] + x[i + 1] + 30);
  }
  return y;
}

}  // namespace

TEST_CASE("Session folds constant chains at prepare time", "[interp][session]") {
  DynamicBatchModel m;
  auto s = quant::interp::Session::create(m.g);
  INFO(s.status().message());
  REQUIRE(s.has_value());
  // Constant, Transpose and the shape Constant are folded: Gemm and Reshape remain.
  CHECK((*s)->step_count() == 2);
  std::set<std::string> observed;
  auto out = (*s)->run({Tensor::from_vector<float>({1, 2}, {1, 2})},
                       [&](const quant::ir::Value& v, const Tensor&) { observed.insert(v.name()); });
  REQUIRE(out.has_value());
  auto y = (*out)[0].values<float>();
  CHECK(std::vector<float>(y.begin(), y.end()) == expected_rows({1, 2}));
  // Folded values are constants, not activations: the observer skips them.
  CHECK(observed == std::set<std::string>{"x", "gemm_out", "y"});
}

TEST_CASE("One session runs batch 1 and batch 4 of a dynamic-batch model", "[interp][session]") {
  DynamicBatchModel m;
  auto s = quant::interp::Session::create(m.g);
  REQUIRE(s.has_value());
  const std::vector<float> one{1, 2};
  const std::vector<float> four{1, 2, 3, 4, -1, -2, 0.5f, 0};
  for (int round = 0; round < 2; ++round) {
    auto o1 = (*s)->run({Tensor::from_vector<float>({1, 2}, one)});
    REQUIRE(o1.has_value());
    CHECK((*o1)[0].shape() == quant::Dims{1, 3});
    auto v1 = (*o1)[0].values<float>();
    CHECK(std::vector<float>(v1.begin(), v1.end()) == expected_rows(one));
    auto o4 = (*s)->run({Tensor::from_vector<float>({4, 2}, four)});
    REQUIRE(o4.has_value());
    CHECK((*o4)[0].shape() == quant::Dims{4, 3});
    auto v4 = (*o4)[0].values<float>();
    CHECK(std::vector<float>(v4.begin(), v4.end()) == expected_rows(four));
  }
  // The fixed dim is still checked.
  auto bad = (*s)->run({Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("expects [-1,2]"));
}

TEST_CASE("Session reports a failing foldable node at prepare time with its name", "[interp][session]") {
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  auto* a = g.add_value("a");
  a->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto* b = g.add_value("b");
  b->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto* c = g.add_value("c");
  g.add_node("MatMul", {a, b}, {c}, "bad_matmul");
  g.outputs.push_back(c);
  auto s = quant::interp::Session::create(g);
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.status().message(), Catch::Contains("MatMul node 'bad_matmul'"));
}

TEST_CASE("A folded graph output is returned by every run", "[interp][session]") {
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  auto* x = g.add_value("x");
  x->dtype = DType::Float32;
  g.inputs.push_back(x);
  auto* k = g.add_value("k");
  auto* cst = g.add_node("Constant", {}, {k}, "k");
  cst->attributes["value"] = Attribute::of_tensor(Tensor::from_vector<float>({2}, {3, 4}));
  auto* y = g.add_value("y");
  g.add_node("Relu", {x}, {y}, "relu");
  g.outputs = {y, k};
  auto s = quant::interp::Session::create(g);
  REQUIRE(s.has_value());
  CHECK((*s)->step_count() == 1);
  for (int i = 0; i < 2; ++i) {
    auto out = (*s)->run({Tensor::from_vector<float>({1}, {-1})});
    REQUIRE(out.has_value());
    CHECK((*out)[1].values<float>()[1] == 4.0f);
  }
}
