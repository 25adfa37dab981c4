#include "libquant/passes/subgraphs.h"

#include "libquant/ir/scope.h"
#include "libquant/onnx/model_io.h"

namespace quant::passes {
namespace {

void append_report(const std::string& scope, QuantizeReport&& from, QuantizeReport* to) {
  for (NodeDecision& n : from.nodes) {
    n.node = scope + "/" + n.node;
    to->nodes.push_back(std::move(n));
  }
  for (TensorDecision& t : from.tensors) {
    t.tensor = scope + "/" + t.tensor;
    to->tensors.push_back(std::move(t));
  }
  for (std::string& note : from.notes) to->notes.push_back(scope + ": " + note);
}

// Imports `bytes`, rewrites the body (its own bodies first), exports it back.
Status rewrite_body(ir::Graph& graph, std::string& bytes, const std::string& scope, const BodyPass& pass, QuantizeReport* report) {
  auto sub = onnx_io::import_subgraph(bytes, graph.opset_imports);
  if (!sub) return sub.status().with_context(scope);
  QT_RETURN_IF_ERROR(rewrite_bodies(*sub->graph, pass, report, scope));
  auto body_report = pass(*sub->graph, scope);
  if (!body_report) return body_report.status().with_context(scope);
  append_report(scope, std::move(body_report).value(), report);
  // A body uses the model's opset imports: a domain the rewrite needs goes there.
  for (const auto& [domain, version] : sub->graph->opset_imports) graph.opset_imports.try_emplace(domain, version);
  auto out = onnx_io::export_subgraph(*sub);
  if (!out) return out.status().with_context(scope);
  bytes = std::move(out).value();
  return Status::ok();
}

}  // namespace

Status rewrite_bodies(ir::Graph& graph, const BodyPass& pass, QuantizeReport* report, const std::string& scope) {
  for (const auto& n : graph.nodes()) {
    for (auto& [key, a] : n->attributes) {
      if (a.kind == ir::Attribute::Kind::Graph) {
        QT_RETURN_IF_ERROR(rewrite_body(graph, a.s, ir::body_scope(scope, *n, key), pass, report));
      } else if (a.kind == ir::Attribute::Kind::Graphs) {
        for (size_t i = 0; i < a.strings.size(); ++i)
          QT_RETURN_IF_ERROR(rewrite_body(graph, a.strings[i], ir::body_scope(scope, *n, key + "." + std::to_string(i)),
                                          pass, report));
      }
    }
  }
  return Status::ok();
}

profile::Profile body_profile(const profile::Profile& profile, const std::string& scope) {
  profile::Profile out = profile;
  const std::string prefix = scope + "/";
  for (const auto& [name, t] : profile.tensors)
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) out.tensors[name.substr(prefix.size())] = t;
  return out;
}

Expected<Lowering> lower_qdq_with_bodies(ir::Graph& graph, const LowerOptions& options, std::vector<std::string>* body_notes) {
  QT_ASSIGN_OR_RETURN(Lowering out, lower_qdq(graph, options));
  QuantizeReport notes;
  const BodyPass lower_body = [&](ir::Graph& body, const std::string& scope) -> Expected<QuantizeReport> {
    QT_ASSIGN_OR_RETURN(Lowering l, lower_qdq(body, options));
    for (auto& [node, op] : l.lowered) out.lowered[scope + "/" + node] = op;
    for (auto& [node, why] : l.float_reasons) out.float_reasons[scope + "/" + node] = why;
    QuantizeReport r;
    r.notes = std::move(l.notes);
    return r;
  };
  QT_RETURN_IF_ERROR(rewrite_bodies(graph, lower_body, &notes));
  out.notes.insert(out.notes.end(), notes.notes.begin(), notes.notes.end());
  if (body_notes) *body_notes = std::move(notes.notes);
  return out;
}

}  // namespace quant::passes
