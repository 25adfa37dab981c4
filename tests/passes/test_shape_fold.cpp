#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/interp/compare.h"
#include "libquant/interp/session.h"
#include "libquant/passes/qdq.h"
#include "libquant/passes/shape_fold.h"

using quant::Dims;
using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Value;
using quant::passes::axis_after_reshape;
using quant::passes::axis_after_transpose;

TEST_CASE("the channel axis follows Transpose and survives only whole reshapes", "[passes][shape_fold]") {
  CHECK(axis_after_transpose(0, Dims{1, 0}) == 1);
  CHECK(axis_after_transpose(2, Dims{2, 0, 1}) == 0);
  CHECK(axis_after_reshape(Dims{4, 18}, Dims{4, 2, 3, 3}, 0) == 0);   // kept
  CHECK(axis_after_reshape(Dims{1, 8, 16}, Dims{8, 16}, 1) == 0);     // unit dim dropped
  CHECK(axis_after_reshape(Dims{8, 16}, Dims{8, 1, 16}, 1) == 2);     // unit dim added
  CHECK_FALSE(axis_after_reshape(Dims{8, 16}, Dims{8, 4, 4}, 1));     // split
  CHECK_FALSE(axis_after_reshape(Dims{4, 2, 9}, Dims{8, 9}, 0));      // merged
  CHECK_FALSE(axis_after_reshape(Dims{4, 2, 9}, Dims{4, 2, 9}, 5));   // no such axis
}

namespace {

Value* add_input(Graph& g, const std::string& name, Dims shape) {
  Value* v = g.add_value(name);
  v->dtype = quant::DType::Float32;
  v->has_shape = true;
  v->shape = std::move(shape);
  g.inputs.push_back(v);
  return v;
}

Value* add_const(Graph& g, const std::string& name, Tensor t) {
  Value* v = g.add_value(name);
  v->dtype = t.dtype();
  v->has_shape = true;
  v->shape = t.shape();
  v->constant = std::make_unique<Tensor>(std::move(t));
  return v;
}

Value* add_act(Graph& g, const std::string& name) {
  Value* v = g.add_value(name);
  v->dtype = quant::DType::Float32;
  return v;
}

// Weights whose channels (along `axis`) span a factor of 100 in magnitude.
Tensor spread_weights(Dims shape, int64_t axis, std::mt19937& rng) {
  Tensor t(quant::DType::Float32, shape);
  std::uniform_real_distribution<float> d(-1, 1);
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t channels = shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < t.size(); ++i) {
    const int64_t c = (i / inner) % channels;
    t.data<float>()[i] = d(rng) * static_cast<float>(std::pow(100.0, static_cast<double>(c) / static_cast<double>(channels - 1)));
  }
  return t;
}

struct Result {
  double snr;
  quant::passes::QuantizeReport report;
};

// Profiles `g`, quantizes a copy built by `build`, compares on fresh samples.
template <class Build>
Result quantize_and_compare(Build build, Dims input_shape) {
  Graph fg, qg;
  std::mt19937 r1(5), r2(5);
  build(fg, r1);
  build(qg, r2);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<Tensor> samples;
  for (int i = 0; i < 8; ++i) {
    Tensor t(quant::DType::Float32, input_shape);
    for (float& v : t.values<float>()) v = d(rng);
    samples.push_back(std::move(t));
  }
  quant::profile::Profile profile;
  auto fs = quant::interp::Session::create(fg);
  REQUIRE(fs.has_value());
  for (const Tensor& s : samples) {
    REQUIRE((*fs)->run({s}, [&](const Value& v, const Tensor& t) {
      if (t.dtype() != quant::DType::Float32) return;
      auto it = profile.tensors.try_emplace(v.name(), quant::profile::TensorProfile{"float32", t.shape(), quant::profile::Histogram(512)}).first;
      it->second.hist.add(t.data<float>(), t.size());
    }).has_value());
  }
  auto report = quant::passes::insert_qdq(qg, profile, {});
  INFO(report.status().message());
  REQUIRE(report.has_value());
  for (const auto& n : qg.nodes()) CHECK_FALSE(quant::passes::is_foldable_shape_op(*n));
  auto qs = quant::interp::Session::create(qg);
  REQUIRE(qs.has_value());
  quant::interp::ErrorStats err;
  for (const Tensor& s : samples) {
    auto a = (*fs)->run({s});
    auto b = (*qs)->run({s});
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    REQUIRE(err.add((*a)[0], (*b)[0]).is_ok());
  }
  return {err.snr_db(), *report};
}

const quant::passes::TensorDecision& weight_decision(const quant::passes::QuantizeReport& r, const std::string& name) {
  for (const auto& t : r.tensors)
    if (t.tensor == name) return t;
  FAIL("no decision for " << name);
  throw;
}

}  // namespace

TEST_CASE("a Transpose-fed MatMul weight is folded with the axis moved", "[passes][shape_fold]") {
  auto build = [](Graph& g, std::mt19937& rng) {
    g.opset_imports[""] = 13;
    Value* x = add_input(g, "x", {4, 8});
    Value* wt = add_const(g, "wt", spread_weights({16, 8}, 0, rng));  // channel = dim 0 here
    Value* w = add_act(g, "w");
    auto* tr = g.add_node("Transpose", {wt}, {w}, "transpose_w");
    tr->attributes["perm"] = quant::ir::Attribute::of_ints({1, 0});
    Value* y = add_act(g, "y");
    g.add_node("MatMul", {x, w}, {y}, "matmul");
    g.outputs = {y};
  };
  auto r = quantize_and_compare(build, {4, 8});
  const auto& d = weight_decision(r.report, "wt");
  CHECK(d.params.axis == 1);
  CHECK(d.params.scale.size() == 16);
  CHECK(d.params.scale[15] > 50 * d.params.scale[0]);
  CHECK_THAT(d.method, Catch::Contains("axis 0 -> 1"));
  CHECK(r.snr >= 35.0);
}

TEST_CASE("a Reshape-fed Conv weight keeps its channel axis", "[passes][shape_fold]") {
  auto build = [](Graph& g, std::mt19937& rng) {
    g.opset_imports[""] = 13;
    Value* x = add_input(g, "x", {1, 2, 5, 5});
    Value* wf = add_const(g, "wflat", spread_weights({4, 18}, 0, rng));
    Value* shape = add_const(g, "wshape", Tensor::from_vector<int64_t>({4}, {4, 2, 3, 3}));
    Value* w = add_act(g, "w");
    g.add_node("Reshape", {wf, shape}, {w}, "reshape_w");
    Value* y = add_act(g, "y");
    g.add_node("Conv", {x, w}, {y}, "conv");
    g.outputs = {y};
  };
  auto r = quantize_and_compare(build, {1, 2, 5, 5});
  const auto& d = weight_decision(r.report, "wflat");
  CHECK(d.params.axis == 0);
  CHECK(d.params.scale.size() == 4);
  CHECK_THAT(d.method, Catch::Contains("folded on int8 data"));
  CHECK(r.snr >= 35.0);
}

TEST_CASE("a Reshape that splits the channel dim quantizes after the shape op", "[passes][shape_fold]") {
  auto build = [](Graph& g, std::mt19937& rng) {
    g.opset_imports[""] = 13;
    Value* x = add_input(g, "x", {1, 2, 5, 5});
    Value* wf = add_const(g, "wsplit", spread_weights({2, 2, 18}, 1, rng));
    Value* shape = add_const(g, "wshape", Tensor::from_vector<int64_t>({4}, {4, 2, 3, 3}));
    Value* w = add_act(g, "w");
    g.add_node("Reshape", {wf, shape}, {w}, "reshape_w");
    Value* y = add_act(g, "y");
    g.add_node("Conv", {x, w}, {y}, "conv");
    g.outputs = {y};
  };
  auto r = quantize_and_compare(build, {1, 2, 5, 5});
  const auto& d = weight_decision(r.report, "wsplit");
  CHECK(d.params.axis == 0);
  CHECK(d.params.scale.size() == 4);
  CHECK_THAT(d.method, Catch::Contains("quantized after the shape ops"));
  CHECK(r.snr >= 30.0);
}
