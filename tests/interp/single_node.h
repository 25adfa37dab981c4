// Builds and runs a one-node graph: op tests read like the spec (inputs,
// attributes, expected outputs).
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

namespace quant::testing {

struct NodeSpec {
  NodeSpec(std::string op, int64_t set, std::vector<Tensor> ins)
      : op_type(std::move(op)), opset(set), inputs(std::move(ins)) {}
  std::string op_type;
  int64_t opset = 13;
  std::string domain;                   // "" = ai.onnx; others are imported at version 1
  std::vector<Tensor> inputs;           // empty Tensor = omitted optional input
  std::vector<bool> constant_inputs;    // inputs given as initializers (default: none)
  std::map<std::string, ir::Attribute> attributes;
  size_t num_outputs = 1;
  int threads = 1;  // SessionOptions::threads
};

// Tensor makers for op tests: shape and values in row-major order.
template <class T>
Tensor tensor_of(Dims shape, const std::vector<T>& v) {
  return Tensor::from_vector<T>(std::move(shape), v);
}
inline Tensor f32(Dims shape, const std::vector<float>& v) { return tensor_of<float>(std::move(shape), v); }
inline Tensor f64(Dims shape, const std::vector<double>& v) { return tensor_of<double>(std::move(shape), v); }
inline Tensor i64(Dims shape, const std::vector<int64_t>& v) { return tensor_of<int64_t>(std::move(shape), v); }
inline Tensor i32(Dims shape, const std::vector<int32_t>& v) { return tensor_of<int32_t>(std::move(shape), v); }
inline Tensor boolean(Dims shape, const std::vector<uint8_t>& v) {
  Tensor t(DType::Bool, std::move(shape));
  std::copy(v.begin(), v.end(), t.data<uint8_t>());
  return t;
}

// The node's one-node graph in `g`; returns the feeds its graph inputs take
// (the inputs not given as initializers), in order.
inline std::vector<Tensor> build_node_graph(const NodeSpec& spec, ir::Graph& g) {
  g.opset_imports[""] = spec.opset;
  if (!spec.domain.empty()) g.opset_imports[spec.domain] = 1;
  std::vector<ir::Value*> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.inputs[i].empty()) {
      ins.push_back(nullptr);
      continue;
    }
    ir::Value* v = g.add_value("in" + std::to_string(i));
    v->dtype = spec.inputs[i].dtype();
    v->kind = spec.inputs[i].kind();  // a sequence or optional input
    bool constant = i < spec.constant_inputs.size() && spec.constant_inputs[i];
    if (constant) {
      v->constant = std::make_unique<Tensor>(spec.inputs[i]);
    } else {
      g.inputs.push_back(v);
      feeds.push_back(spec.inputs[i]);
    }
    ins.push_back(v);
  }
  std::vector<ir::Value*> outs;
  for (size_t k = 0; k < spec.num_outputs; ++k) outs.push_back(g.add_value("out" + std::to_string(k)));
  ir::Node* n = g.add_node(spec.op_type, ins, outs, "node", spec.domain);
  n->attributes = spec.attributes;
  g.outputs = outs;
  return feeds;
}

// Runs the node; returns its outputs or the error of create/run.
inline Expected<std::vector<Tensor>> run_node(const NodeSpec& spec) {
  ir::Graph g;
  const std::vector<Tensor> feeds = build_node_graph(spec, g);
  interp::SessionOptions options;
  options.threads = spec.threads;
  QT_ASSIGN_OR_RETURN(auto session, interp::Session::create(g, options));
  return session->run(feeds);
}

// The outputs of a node that must run; the test stops with the error otherwise.
inline std::vector<Tensor> run_ok(const NodeSpec& spec) {
  auto out = run_node(spec);
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return *out;
}

// Output k of a node that must run.
inline Tensor run_one(const NodeSpec& spec, size_t k = 0) { return run_ok(spec).at(k); }

// The message of a node that must be refused as bad input.
inline std::string run_error(const NodeSpec& spec) {
  auto out = run_node(spec);
  REQUIRE_FALSE(out.has_value());
  CHECK(out.status().code() == StatusCode::kBadInput);
  return out.status().message();
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}

}  // namespace quant::testing
