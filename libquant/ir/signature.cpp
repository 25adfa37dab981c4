#include "libquant/ir/signature.h"

#include "libquant/core/sha256.h"

namespace quant::ir {

std::string graph_signature(const Graph& graph) {
  std::string text;
  auto name = [](const Value* v) { return v ? v->name() : std::string(); };
  text += "inputs";
  for (const Value* v : graph.inputs) text += " " + v->name();
  text += "\noutputs";
  for (const Value* v : graph.outputs) text += " " + v->name();
  text += "\n";
  for (const auto& n : graph.nodes()) {
    text += n->domain + "." + n->op_type + "(";
    for (const Value* v : n->inputs) text += name(v) + ",";
    text += ")->(";
    for (const Value* v : n->outputs) text += name(v) + ",";
    text += ")\n";
  }
  return sha256_hex(text);
}

}  // namespace quant::ir
