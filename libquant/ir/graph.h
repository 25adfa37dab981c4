// The in-memory graph: a Graph owns its Values and Nodes; everything else holds
// plain pointers into it. Node order in the container is kept topological by
// the importer and by passes (topological_order() recomputes it when needed).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/ir/attribute.h"

namespace quant::ir {

class Node;

// A named tensor flowing through the graph: a graph input, an initializer
// (constant data), or the output of one node.
class Value {
 public:
  explicit Value(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  DType dtype = DType::Undefined;
  // Declared or inferred shape; -1 marks an unknown dim, `dim_names` keeps
  // symbolic names ("batch") for export. `has_shape` is false when even the
  // rank is unknown.
  bool has_shape = false;
  Dims shape;
  std::vector<std::string> dim_names;

  // A sequence or optional value (ONNX sequence_type / optional_type): `kind`
  // says which and `type_proto` keeps the declared TypeProto serialized so
  // that export writes it back. dtype stays Undefined: passes leave such
  // values alone.
  Tensor::Kind kind = Tensor::Kind::Tensor;
  std::string type_proto;

  Node* producer = nullptr;
  // Initializer data, when this Value is a constant of the graph.
  std::unique_ptr<Tensor> constant;
  bool is_constant() const { return constant != nullptr; }

 private:
  friend class Graph;
  std::string name_;
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain (ai.onnx)
  std::vector<Value*> inputs;   // nullptr marks an omitted optional input
  std::vector<Value*> outputs;  // nullptr marks an omitted optional output
  // Values of this graph that the node's subgraphs (If/Loop/Scan bodies) read
  // by name without listing them as inputs (ONNX Runtime's "implicit inputs").
  // Uses like any input for consumers(), ordering, verify() and clean-up; a
  // pass must not rewire them (the body names the value), only keep it alive.
  std::vector<Value*> implicit_inputs;
  std::map<std::string, Attribute> attributes;
  std::string doc;

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const Attribute* find_attribute(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  // "Conv 'conv1'" for error messages.
  std::string describe() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Model-level fields kept for a faithful round trip.
  std::string name;
  int64_t ir_version = 8;
  std::string producer_name;
  std::string producer_version;
  std::string doc;
  std::map<std::string, int64_t> opset_imports;  // domain -> version
  std::vector<std::pair<std::string, std::string>> metadata;

  std::vector<Value*> inputs;   // graph inputs that are not initializers
  std::vector<Value*> outputs;

  int64_t opset(const std::string& domain = "") const;

  // Values: names are unique; add_value fails (returns nullptr) on a duplicate.
  Value* add_value(const std::string& name);
  Value* find_value(const std::string& name) const;
  // A fresh name derived from `base` that no value or node uses yet.
  std::string unique_name(const std::string& base);
  // Values in creation order (initializers, inputs, node outputs...).
  std::vector<Value*> values() const;
  // Initializers: constant values not produced by a node.
  std::vector<Value*> initializers() const;

  Node* add_node(std::string op_type, std::vector<Value*> inputs, std::vector<Value*> outputs,
                 std::string name = "", std::string domain = "");
  // Inserts before `before` in the node order (nullptr: at the end).
  Node* insert_node(Node* before, std::string op_type, std::vector<Value*> inputs,
                    std::vector<Value*> outputs, std::string name = "", std::string domain = "");
  void remove_node(Node* node);
  // Removes values that no node (inputs, implicit inputs, outputs), graph
  // input or output references any more.
  void remove_unused_values();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  // Nodes reading `value`, through an input or a subgraph (implicit input).
  std::vector<Node*> consumers(const Value* value) const;
  bool is_graph_output(const Value* value) const;

  // Nodes in a valid execution order; an error names a node on a cycle or
  // an input that nothing produces.
  Expected<std::vector<Node*>> topological_order() const;
  // Reorders the node container topologically.
  Status sort_topologically();

  // Replaces every use of `from` (node inputs and graph outputs) with `to`.
  // Implicit inputs stay: a subgraph reads `from` by its name.
  void replace_all_uses(Value* from, Value* to);

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> value_by_name_;
  int64_t name_counter_ = 0;
};

// Constant data of a value: its initializer, or the tensor `value` of the
// Constant node producing it; nullptr when it is not a compile-time constant.
const Tensor* constant_data(const Value* value);

// Checks structural invariants: every node input is a graph input, a constant
// or produced by a node; names unique; no cycles.
Status verify(const Graph& graph);

}  // namespace quant::ir
