#include "libquant/passes/param_groups.h"

namespace quant::passes {
namespace {

// Union-find over the chosen activations, in first-seen order.
class Joiner {
 public:
  size_t id(const ir::Value* v) {
    auto [it, added] = index_.try_emplace(v, parent_.size());
    if (added) parent_.push_back(parent_.size()), values_.push_back(v);
    return it->second;
  }
  size_t root(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void join(const ir::Value* a, const ir::Value* b) {
    size_t ra = root(id(a)), rb = root(id(b));
    if (ra != rb) parent_[std::max(ra, rb)] = std::min(ra, rb);  // the earlier tensor stays the root
  }
  size_t size() const { return parent_.size(); }
  const ir::Value* value(size_t i) const { return values_[i]; }

 private:
  std::map<const ir::Value*, size_t> index_;
  std::vector<size_t> parent_;
  std::vector<const ir::Value*> values_;
};

}  // namespace

ParamGroups group_activations(const std::vector<ir::Node*>& nodes, const std::set<const ir::Value*>& chosen,
                              const std::set<std::string>& shares_input_params, const std::set<std::string>& same_params) {
  Joiner j;
  std::vector<std::pair<const ir::Node*, const ir::Value*>> joins;  // op, a tensor it joined
  for (const ir::Node* n : nodes) {
    if (!n->domain.empty() || n->outputs.empty()) continue;
    // The tensors n joins: every chosen input and the output of a
    // same-parameters op (its output may be unquantized: TensorRT-style
    // placement), the output and first input of a data-movement op.
    std::vector<const ir::Value*> members;
    const ir::Value* out = n->outputs[0];
    if (same_params.count(n->op_type)) {
      for (const ir::Value* in : n->inputs)
        if (in && chosen.count(in)) members.push_back(in);
      if (chosen.count(out)) members.push_back(out);
    } else if (shares_input_params.count(n->op_type) && n->input(0) && chosen.count(n->input(0)) && chosen.count(out)) {
      members = {n->input(0), out};
    }
    if (members.size() < 2) continue;
    for (size_t i = 1; i < members.size(); ++i) j.join(members[0], members[i]);
    joins.emplace_back(n, members[0]);
  }
  ParamGroups g;
  std::map<size_t, size_t> group_of_root;
  for (size_t i = 0; i < j.size(); ++i) {
    const size_t r = j.root(i);
    auto [it, added] = group_of_root.try_emplace(r, g.members.size());
    if (added) g.members.emplace_back(), g.joined_by.emplace_back();
    g.members[it->second].push_back(j.value(i));
    g.group_of[j.value(i)] = it->second;
  }
  for (const auto& [n, out] : joins) g.joined_by[g.group_of.at(out)].push_back(n);
  return g;
}

}  // namespace quant::passes
