// Builds QDQ graphs the way qconvert writes them, for the lowering tests
// (test_lower_qdq.cpp, test_lower_qdq_exact.cpp), and profiles float graphs
// for the QDQ insertion tests (test_qdq.cpp, test_qdq_target_rules.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "libquant/core/tensor.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/profile/profile.h"

namespace quant::testing {

// A scalar zero point of type `t`.
inline Tensor zero_point(DType t, int32_t z) {
  Tensor out(t, {});
  switch (t) {
    case DType::UInt8: out.data<uint8_t>()[0] = static_cast<uint8_t>(z); break;
    case DType::Int8: out.data<int8_t>()[0] = static_cast<int8_t>(z); break;
    case DType::UInt16: out.data<uint16_t>()[0] = static_cast<uint16_t>(z); break;
    case DType::Int16: out.data<int16_t>()[0] = static_cast<int16_t>(z); break;
    default: FAIL("not a quantized type");
  }
  return out;
}

// Every quantized float activation X goes X -> QuantizeLinear -> X_quantized
// -> DequantizeLinear -> X_dequantized, and its readers read X_dequantized.
struct QdqGraph {
  ir::Graph g;
  explicit QdqGraph(int64_t opset = 13) { g.opset_imports[""] = opset; }

  ir::Value* input(const std::string& name) {
    ir::Value* v = g.add_value(name);
    v->dtype = DType::Float32;
    g.inputs.push_back(v);
    return v;
  }
  ir::Value* value(const std::string& name) {
    ir::Value* v = g.add_value(name);
    v->dtype = DType::Float32;
    return v;
  }
  // Q/DQ pair on `x`; returns the dequantized value.
  ir::Value* qdq(ir::Value* x, float scale, int32_t zp, DType t = DType::UInt8) {
    const std::string n = x->name();
    ir::Value* s = passes::add_constant(g, n + "_scale", Tensor::scalar<float>(scale));
    ir::Value* z = passes::add_constant(g, n + "_zero_point", zero_point(t, zp));
    ir::Value* q = g.add_value(n + "_quantized");
    q->dtype = t;
    ir::Value* d = value(n + "_dequantized");
    g.add_node("QuantizeLinear", {x, s, z}, {q}, n + "_QuantizeLinear");
    g.add_node("DequantizeLinear", {q, s, z}, {d}, n + "_DequantizeLinear");
    return d;
  }
  // A constant integer weight behind its DequantizeLinear (zero points 0;
  // one scale: per tensor, several: per channel along `axis`).
  ir::Value* weight(const std::string& name, Tensor q, std::vector<float> scales, int64_t axis) {
    ir::Value* qv = passes::add_constant(g, name + "_quantized", std::move(q));
    Tensor st = scales.size() == 1 ? Tensor::scalar<float>(scales[0])
                                   : Tensor::from_vector<float>({static_cast<int64_t>(scales.size())}, scales);
    ir::Value* s = passes::add_constant(g, name + "_scale", std::move(st));
    Tensor zt = scales.size() == 1 ? Tensor(qv->dtype, {}) : Tensor(qv->dtype, {static_cast<int64_t>(scales.size())});
    ir::Value* z = passes::add_constant(g, name + "_zero_point", std::move(zt));
    ir::Value* d = value(name + "_dequantized");
    ir::Node* n = g.add_node("DequantizeLinear", {qv, s, z}, {d}, name + "_DequantizeLinear");
    if (scales.size() > 1) n->attributes["axis"] = ir::Attribute::of_int(axis);
    return d;
  }
  ir::Value* op(const std::string& type, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Value* y = value(out);
    g.add_node(type, std::move(ins), {y}, out + "_node");
    return y;
  }
};

// Runs g once on `inputs` in a Session (Q/DQ in float unless g was lowered),
// its kernels on `threads` threads.
inline std::vector<Tensor> run_graph(const ir::Graph& g, const std::vector<Tensor>& inputs, int threads = 1) {
  interp::SessionOptions options;
  options.threads = threads;
  auto s = interp::Session::create(g, options);
  if (!s) FAIL(s.status().message());
  auto out = (*s)->run(inputs);
  if (!out) FAIL(out.status().message());
  return *out;
}

// A float32 tensor of `shape` drawn uniformly from [lo, hi).
inline Tensor random_tensor(Dims shape, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::Float32, std::move(shape));
  for (float& v : t.values<float>()) v = d(rng);
  return t;
}

// Profiles the float graph g on `samples` (one input each) as qprofile does.
inline profile::Profile profile_of(const ir::Graph& g, const std::vector<Tensor>& samples) {
  profile::Profile p;
  auto session = interp::Session::create(g);
  REQUIRE(session.has_value());
  for (const Tensor& s : samples) {
    auto out = (*session)->run({s}, [&](const ir::Value& v, const Tensor& t) {
      auto it = p.tensors.try_emplace(v.name(), profile::TensorProfile{"float32", t.shape(), profile::Histogram(256)}).first;
      it->second.hist.add(t.data<float>(), t.size());
    });
    REQUIRE(out.has_value());
  }
  return p;
}

}  // namespace quant::testing
