#include "libquant/ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace quant::ir {

const Attribute* Node::find_attribute(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = find_attribute(key);
  return a && a->kind == Attribute::Kind::Int ? a->i : fallback;
}

float Node::attr_float(const std::string& key, float fallback) const {
  const Attribute* a = find_attribute(key);
  return a && a->kind == Attribute::Kind::Float ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = find_attribute(key);
  return a && a->kind == Attribute::Kind::String ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> fallback) const {
  const Attribute* a = find_attribute(key);
  return a && a->kind == Attribute::Kind::Ints ? a->ints : fallback;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return d + " node '" + name + "'";
}

int64_t Graph::opset(const std::string& domain) const {
  auto it = opset_imports.find(domain);
  if (it == opset_imports.end() && domain == "ai.onnx") it = opset_imports.find("");
  return it == opset_imports.end() ? 0 : it->second;
}

Value* Graph::add_value(const std::string& name) {
  if (value_by_name_.count(name)) return nullptr;
  values_.push_back(std::make_unique<Value>(name));
  Value* v = values_.back().get();
  value_by_name_[name] = v;
  return v;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? nullptr : it->second;
}

std::string Graph::unique_name(const std::string& base) {
  if (!value_by_name_.count(base)) {
    bool node_has_it = std::any_of(nodes_.begin(), nodes_.end(), [&](auto& n) { return n->name == base; });
    if (!node_has_it) return base;
  }
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++name_counter_);
    if (value_by_name_.count(candidate)) continue;
    bool node_has_it = std::any_of(nodes_.begin(), nodes_.end(), [&](auto& n) { return n->name == candidate; });
    if (!node_has_it) return candidate;
  }
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (auto& v : values_) out.push_back(v.get());
  return out;
}

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (auto& v : values_)
    if (v->is_constant() && v->producer == nullptr) out.push_back(v.get());
  return out;
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> ins, std::vector<Value*> outs,
                      std::string name, std::string domain) {
  return insert_node(nullptr, std::move(op_type), std::move(ins), std::move(outs), std::move(name),
                     std::move(domain));
}

Node* Graph::insert_node(Node* before, std::string op_type, std::vector<Value*> ins,
                         std::vector<Value*> outs, std::string name, std::string domain) {
  auto node = std::make_unique<Node>();
  node->op_type = std::move(op_type);
  node->domain = std::move(domain);
  node->name = std::move(name);
  node->inputs = std::move(ins);
  node->outputs = std::move(outs);
  for (Value* v : node->outputs)
    if (v) v->producer = node.get();
  Node* raw = node.get();
  auto pos = nodes_.end();
  if (before) {
    pos = std::find_if(nodes_.begin(), nodes_.end(), [&](auto& n) { return n.get() == before; });
  }
  nodes_.insert(pos, std::move(node));
  return raw;
}

void Graph::remove_node(Node* node) {
  for (Value* v : node->outputs)
    if (v && v->producer == node) v->producer = nullptr;
  std::erase_if(nodes_, [&](auto& n) { return n.get() == node; });
}

void Graph::remove_unused_values() {
  std::set<const Value*> used;
  for (auto& n : nodes_) {
    for (Value* v : n->inputs) used.insert(v);
    for (Value* v : n->implicit_inputs) used.insert(v);
    for (Value* v : n->outputs) used.insert(v);
  }
  for (Value* v : inputs) used.insert(v);
  for (Value* v : outputs) used.insert(v);
  std::vector<std::unique_ptr<Value>> kept;
  for (auto& v : values_) {
    if (used.count(v.get())) {
      kept.push_back(std::move(v));
    } else {
      value_by_name_.erase(v->name());
    }
  }
  values_ = std::move(kept);
}

std::vector<Node*> Graph::consumers(const Value* value) const {
  std::vector<Node*> out;
  for (auto& n : nodes_) {
    const bool reads = std::find(n->inputs.begin(), n->inputs.end(), value) != n->inputs.end() ||
                       std::find(n->implicit_inputs.begin(), n->implicit_inputs.end(), value) != n->implicit_inputs.end();
    if (reads) out.push_back(n.get());
  }
  return out;
}

bool Graph::is_graph_output(const Value* value) const {
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

Expected<std::vector<Node*>> Graph::topological_order() const {
  // Kahn's algorithm, stable with respect to the current node order so that an
  // already sorted graph keeps its order.
  std::unordered_map<const Value*, const Node*> producer;
  for (auto& n : nodes_)
    for (Value* v : n->outputs)
      if (v) producer[v] = n.get();
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const Node*, std::vector<Node*>> users;
  for (auto& n : nodes_) {
    std::set<const Node*> deps;
    for (const auto* list : {&n->inputs, &n->implicit_inputs})
      for (Value* v : *list) {
        if (!v) continue;
        auto it = producer.find(v);
        if (it != producer.end()) deps.insert(it->second);
      }
    pending[n.get()] = static_cast<int>(deps.size());
    for (const Node* d : deps) users[d].push_back(n.get());
  }
  std::vector<Node*> order;
  std::vector<Node*> ready;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
    if (pending[it->get()] == 0) ready.push_back(it->get());
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    std::vector<Node*> now_ready;
    for (Node* u : users[n])
      if (--pending[u] == 0) now_ready.push_back(u);
    // Keep original relative order: push in reverse container order.
    std::sort(now_ready.begin(), now_ready.end(), [&](Node* a, Node* b) { return index[a] > index[b]; });
    for (Node* r : now_ready) ready.push_back(r);
  }
  if (order.size() != nodes_.size()) {
    for (auto& n : nodes_)
      if (pending[n.get()] > 0)
        return Status::bad_input("graph has a cycle through " + n->describe());
  }
  return order;
}

Status Graph::sort_topologically() {
  QT_ASSIGN_OR_RETURN(auto order, topological_order());
  std::unordered_map<const Node*, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::sort(nodes_.begin(), nodes_.end(), [&](auto& a, auto& b) { return rank[a.get()] < rank[b.get()]; });
  return Status::ok();
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (Value*& v : n->inputs)
      if (v == from) v = to;
  for (Value*& v : outputs)
    if (v == from) v = to;
}

const Tensor* constant_data(const Value* value) {
  if (!value) return nullptr;
  if (value->constant) return value->constant.get();
  const Node* p = value->producer;
  if (p && p->op_type == "Constant" && p->domain.empty()) {
    const Attribute* a = p->find_attribute("value");
    if (a && a->kind == Attribute::Kind::Tensor) return a->t.get();
  }
  return nullptr;
}

Status verify(const Graph& graph) {
  std::set<const Value*> available;
  for (Value* v : graph.inputs) available.insert(v);
  for (Value* v : graph.initializers()) available.insert(v);
  std::set<std::string> node_names;
  QT_ASSIGN_OR_RETURN(auto order, graph.topological_order());
  for (Node* n : order) {
    for (Value* v : n->inputs) {
      if (v && !available.count(v))
        return Status::bad_input(n->describe() + " reads '" + v->name() +
                                 "', which is neither a graph input, an initializer nor a node output");
    }
    for (Value* v : n->implicit_inputs) {
      if (!available.count(v))
        return Status::bad_input(n->describe() + ": its subgraph reads '" + v->name() +
                                 "', which the enclosing graph does not define before the node");
    }
    for (Value* v : n->outputs)
      if (v) available.insert(v);
  }
  for (Value* v : graph.outputs)
    if (!available.count(v)) return Status::bad_input("graph output '" + v->name() + "' is never produced");
  return Status::ok();
}

}  // namespace quant::ir
