#include "libquant/onnx/model_io.h"

#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <cassert>
#include <climits>
#include <filesystem>
#include <optional>
#include <set>

#include "libquant/core/file_util.h"
#include "libquant/io/external_data.h"
#include "libquant/io/tensor_proto.h"

namespace quant::onnx_io {
namespace {

using ir::Attribute;

Status read_value_info(const onnx::ValueInfoProto& info, ir::Value* v) {
  if (!info.has_type()) return Status::ok();
  const auto& type = info.type();
  if (type.has_sequence_type() || type.has_optional_type()) {
    // Sequences (opset 11) and optionals (opset 15) of tensors or of sequences of tensors.
    const onnx::TypeProto* inner = type.has_sequence_type() ? &type.sequence_type().elem_type() : &type.optional_type().elem_type();
    if (inner->has_sequence_type()) inner = &inner->sequence_type().elem_type();
    if (!inner->has_tensor_type())
      return Status::bad_input("value '" + info.name() + "' is a sequence or optional of maps, which are not supported");
    if (inner->tensor_type().elem_type() != 0 && !dtype_from_onnx(inner->tensor_type().elem_type()))
      return Status::bad_input("value '" + info.name() + "' has unsupported element type " +
                               std::to_string(inner->tensor_type().elem_type()));
    v->kind = type.has_sequence_type() ? Tensor::Kind::Sequence : Tensor::Kind::Optional;
    v->type_proto = type.SerializeAsString();
    return Status::ok();
  }
  if (!type.has_tensor_type()) {
    return Status::bad_input("value '" + info.name() + "' is not a tensor (maps are not supported)");
  }
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) {
    auto dt = dtype_from_onnx(tt.elem_type());
    if (!dt)
      return Status::bad_input("value '" + info.name() + "' has unsupported element type " + std::to_string(tt.elem_type()));
    v->dtype = *dt;
  }
  if (tt.has_shape()) {
    v->has_shape = true;
    v->shape.clear();
    v->dim_names.clear();
    for (const auto& d : tt.shape().dim()) {
      // -1 means "unknown" inside qtool, so a declared negative size must not pass as one.
      if (d.has_dim_value() && d.dim_value() < 0)
        return Status::bad_input("value '" + info.name() + "' declares a negative dimension " + std::to_string(d.dim_value()));
      v->shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      v->dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  }
  return Status::ok();
}

Expected<Attribute> read_attribute(const onnx::AttributeProto& a, const std::string& dir) {
  Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
    case onnx::AttributeProto::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
    case onnx::AttributeProto::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
    case onnx::AttributeProto::FLOATS:
      out.kind = Attribute::Kind::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      out.kind = Attribute::Kind::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = Attribute::Kind::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      QT_ASSIGN_OR_RETURN(Tensor t, io::tensor_from_proto(a.t(), dir));
      out.kind = Attribute::Kind::Tensor;
      out.t = std::make_shared<const Tensor>(std::move(t));
      break;
    }
    case onnx::AttributeProto::GRAPH:
      out.kind = Attribute::Kind::Graph;
      out.s = a.g().SerializeAsString();
      break;
    case onnx::AttributeProto::GRAPHS:
      out.kind = Attribute::Kind::Graphs;
      for (const auto& g : a.graphs()) out.strings.push_back(g.SerializeAsString());
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      out.kind = Attribute::Kind::Type;
      out.s = a.tp().SerializeAsString();
      break;
    default:
      return Status::bad_input("attribute '" + a.name() + "' has a type qtool does not support (" +
                               std::to_string(static_cast<int>(a.type())) + ")");
  }
  return out;
}

void write_attribute(const std::string& key, const Attribute& a, onnx::AttributeProto* p) {
  p->set_name(key);
  switch (a.kind) {
    case Attribute::Kind::Float: p->set_type(onnx::AttributeProto::FLOAT); p->set_f(a.f); break;
    case Attribute::Kind::Int: p->set_type(onnx::AttributeProto::INT); p->set_i(a.i); break;
    case Attribute::Kind::String: p->set_type(onnx::AttributeProto::STRING); p->set_s(a.s); break;
    case Attribute::Kind::Floats:
      p->set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      break;
    case Attribute::Kind::Ints:
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      break;
    case Attribute::Kind::Strings:
      p->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : a.strings) p->add_strings(s);
      break;
    case Attribute::Kind::Tensor:
      p->set_type(onnx::AttributeProto::TENSOR);
      io::tensor_to_proto(*a.t, "", p->mutable_t());
      break;
    case Attribute::Kind::Graph:
      p->set_type(onnx::AttributeProto::GRAPH);
      p->mutable_g()->ParseFromString(a.s);
      break;
    case Attribute::Kind::Graphs:
      p->set_type(onnx::AttributeProto::GRAPHS);
      for (const auto& s : a.strings) p->add_graphs()->ParseFromString(s);
      break;
    case Attribute::Kind::Type:
      p->set_type(onnx::AttributeProto::TYPE_PROTO);
      p->mutable_tp()->ParseFromString(a.s);
      break;
  }
}

void write_value_info(const ir::Value& v, onnx::ValueInfoProto* info) {
  info->set_name(v.name());
  if (!v.type_proto.empty()) {
    info->mutable_type()->ParseFromString(v.type_proto);
    return;
  }
  if (v.dtype == DType::Undefined) return;
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(v.dtype));
  if (!v.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    auto* d = shape->add_dim();
    if (v.shape[i] >= 0) d->set_dim_value(v.shape[i]);
    else if (i < v.dim_names.size() && !v.dim_names[i].empty()) d->set_dim_param(v.dim_names[i]);
  }
}

// "node 3 'conv1'" (the index is what identifies an unnamed node).
std::string node_label(const onnx::NodeProto& np, int index) {
  return "node " + std::to_string(index) + (np.name().empty() ? "" : " '" + np.name() + "'");
}

// Finds or creates the Value for a name used by a node.
ir::Value* value_for(ir::Graph& g, const std::string& name) {
  if (ir::Value* v = g.find_value(name)) return v;
  return g.add_value(name);
}

// Names a graph reads without defining them: ONNX subgraphs (If/Loop/Scan
// bodies) may use values of enclosing graphs by name. Includes, recursively,
// the free names of nested subgraphs; first-use order, no duplicates.
void collect_free_names(const onnx::GraphProto& gp, std::vector<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : gp.input()) defined.insert(v.name());
  for (const auto& t : gp.initializer()) defined.insert(t.name());
  for (const auto& n : gp.node())
    for (const auto& o : n.output()) defined.insert(o);
  std::set<std::string> seen;
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : gp.node()) {
    for (const auto& i : n.input()) use(i);
    for (const auto& a : n.attribute()) {
      std::vector<std::string> nested;
      if (a.has_g()) collect_free_names(a.g(), nested);
      for (const auto& g : a.graphs()) collect_free_names(g, nested);
      for (const auto& name : nested) use(name);
    }
  }
  // A body may also return an outer value unchanged.
  for (const auto& o : gp.output()) use(o.name());
}

// Imports the contents of `gp` into `g` (model-level fields already set).
// `outer_names` (subgraphs only) become graph inputs after the formal ones.
Status import_graph(const onnx::GraphProto& gp, const std::string& model_dir, const std::vector<std::string>& outer_names,
                    ir::Graph* g) {
  g->name = gp.name();
  if (gp.sparse_initializer_size() > 0) return Status::bad_input("sparse initializers are not supported");

  for (const auto& init : gp.initializer()) {
    ir::Value* v = g->add_value(init.name());
    if (!v) return Status::bad_input("initializer '" + init.name() + "' is defined twice");
    auto t = io::tensor_from_proto(init, model_dir);
    if (!t) return t.status().with_context("initializer '" + init.name() + "'");
    v->dtype = t->dtype();
    v->has_shape = true;
    v->shape = t->shape();
    v->dim_names.assign(v->shape.size(), "");
    v->constant = std::make_unique<Tensor>(std::move(t).value());
  }
  for (const auto& in : gp.input()) {
    ir::Value* v = g->find_value(in.name());
    if (v && v->is_constant()) continue;  // IR < 4 lists initializers as inputs too
    if (v) return Status::bad_input("graph input '" + in.name() + "' is listed twice");
    v = g->add_value(in.name());
    QT_RETURN_IF_ERROR(read_value_info(in, v));
    g->inputs.push_back(v);
  }
  for (const auto& name : outer_names) {
    ir::Value* v = g->add_value(name);
    if (!v) return Status::internal("outer-scope name '" + name + "' is also defined by the subgraph");
    g->inputs.push_back(v);
  }
  for (int ni = 0; ni < gp.node_size(); ++ni) {
    const auto& np = gp.node(ni);
    std::vector<ir::Value*> ins, outs;
    for (const auto& name : np.input()) ins.push_back(name.empty() ? nullptr : value_for(*g, name));
    for (const auto& name : np.output()) {
      if (name.empty()) {
        outs.push_back(nullptr);
        continue;
      }
      ir::Value* v = value_for(*g, name);
      if (v->producer || v->is_constant() || std::find(outs.begin(), outs.end(), v) != outs.end() ||
          std::find(g->inputs.begin(), g->inputs.end(), v) != g->inputs.end())
        return Status::bad_input("value '" + name + "' is produced twice (second by " + node_label(np, ni) + ")");
      outs.push_back(v);
    }
    const std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    if (np.op_type().empty()) return Status::bad_input(node_label(np, ni) + " has no op_type");
    // Every ONNX operator has at least one output; kernels rely on it.
    if (np.output_size() == 0) return Status::bad_input(node_label(np, ni) + " (" + np.op_type() + ") has no outputs");
    if (!g->opset_imports.count(domain))
      return Status::bad_input(node_label(np, ni) + " (" + np.op_type() + ") uses domain '" + domain +
                               "', which the model's opset_import does not declare");
    ir::Node* n = g->add_node(np.op_type(), ins, outs, np.name(), domain);
    n->doc = np.doc_string();
    // Names its bodies read from enclosing scopes: this graph's values (or,
    // inside a body, outer names that are already inputs of this graph).
    std::vector<std::string> free_names;
    for (const auto& a : np.attribute()) {
      if (a.has_g()) collect_free_names(a.g(), free_names);
      for (const auto& body : a.graphs()) collect_free_names(body, free_names);
    }
    for (const auto& name : free_names) {
      ir::Value* v = value_for(*g, name);
      if (std::find(n->implicit_inputs.begin(), n->implicit_inputs.end(), v) == n->implicit_inputs.end())
        n->implicit_inputs.push_back(v);
    }
    for (const auto& a : np.attribute()) {
      auto attr = read_attribute(a, model_dir);
      if (!attr) return attr.status().with_context(n->describe());
      n->attributes[a.name()] = std::move(attr).value();
    }
  }
  for (const auto& info : gp.value_info()) {
    ir::Value* v = g->find_value(info.name());
    if (v) QT_RETURN_IF_ERROR(read_value_info(info, v));
  }
  for (const auto& out : gp.output()) {
    ir::Value* v = g->find_value(out.name());
    if (!v) return Status::bad_input("graph output '" + out.name() + "' is never produced");
    QT_RETURN_IF_ERROR(read_value_info(out, v));
    g->outputs.push_back(v);
  }
  if (g->outputs.empty()) return Status::bad_input("graph has no outputs");
  QT_RETURN_IF_ERROR(ir::verify(*g));
  QT_RETURN_IF_ERROR(g->sort_topologically());
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<ir::Graph>> import_model(const onnx::ModelProto& model, const std::string& model_dir) {
  auto g = std::make_unique<ir::Graph>();
  g->ir_version = model.ir_version();
  g->producer_name = model.producer_name();
  g->producer_version = model.producer_version();
  g->doc = model.doc_string();
  for (const auto& op : model.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    g->opset_imports[domain] = op.version();
  }
  if (!g->opset_imports.count("")) {
    if (model.opset_import_size() == 0) return Status::bad_input("model declares no opset_import");
  }
  for (const auto& kv : model.metadata_props()) g->metadata.emplace_back(kv.key(), kv.value());
  QT_RETURN_IF_ERROR(import_graph(model.graph(), model_dir, {}, g.get()));
  return g;
}

Expected<Subgraph> import_subgraph(const std::string& serialized_graph, const std::map<std::string, int64_t>& opset_imports) {
  onnx::GraphProto gp;
  if (!gp.ParseFromString(serialized_graph)) return Status::bad_input("subgraph is not a valid GraphProto");
  Subgraph sub;
  sub.graph = std::make_unique<ir::Graph>();
  sub.graph->opset_imports = opset_imports;
  collect_free_names(gp, sub.outer_names);
  // Subgraph initializers with external data are not supported: no model
  // directory is known here, and exporters inline subgraph constants.
  QT_RETURN_IF_ERROR(import_graph(gp, "", sub.outer_names, sub.graph.get()));
  sub.formal_inputs = sub.graph->inputs.size() - sub.outer_names.size();
  return sub;
}

Expected<std::unique_ptr<ir::Graph>> load_model(const std::string& path) {
  QT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return load_model_from_bytes(bytes, path);
}

Expected<std::unique_ptr<ir::Graph>> load_model_from_bytes(std::string_view bytes, const std::string& path) {
  onnx::ModelProto model;
  // Protobuf parses at most 2 GiB (INT_MAX bytes) from one buffer.
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::bad_input(path + ": not a valid ONNX model (protobuf parse failed)");
  }
  if (!model.has_graph()) return Status::bad_input(path + ": ONNX model has no graph");
  auto dir = std::filesystem::path(path).parent_path().string();
  auto g = import_model(model, dir);
  if (!g) return g.status().with_context(path);
  return g;
}

void export_model(const ir::Graph& g, onnx::ModelProto* model) {
  Status st = export_model(g, model, nullptr, 0);
  assert(st.is_ok());  // without a writer nothing can fail
  (void)st;
}

static void write_graph(const ir::Graph& g, size_t formal_inputs, onnx::GraphProto* gp);

// The initializers' protos, in the graph's order: inline, or in `writer`'s file.
static Status export_initializers(const ir::Graph& g, onnx::GraphProto* gp, io::ExternalDataWriter* writer, int64_t threshold) {
  int k = 0;
  for (const ir::Value* v : g.initializers()) {
    const Tensor& t = *v->constant;
    onnx::TensorProto* p = gp->mutable_initializer(k++);
    const bool packed = t.dtype() == DType::Int4 || t.dtype() == DType::UInt4;
    const auto bytes = static_cast<int64_t>(packed ? (t.size() + 1) / 2 : t.byte_size());
    std::optional<io::ExternalRef> ref = writer ? writer->find(t) : std::nullopt;
    if (!ref && writer && t.dtype() != DType::String && bytes > 0 && bytes >= threshold) {
      auto appended = writer->append(t);
      if (!appended) return appended.status();
      ref = *appended;
    }
    if (ref) io::tensor_to_external_proto(t, v->name(), *ref, p);
    else io::tensor_to_proto(t, v->name(), p);
  }
  return Status::ok();
}

Status export_model(const ir::Graph& g, onnx::ModelProto* model, io::ExternalDataWriter* writer, int64_t threshold) {
  model->Clear();
  model->set_ir_version(g.ir_version);
  model->set_producer_name(g.producer_name);
  model->set_producer_version(g.producer_version);
  if (!g.doc.empty()) model->set_doc_string(g.doc);
  for (const auto& [domain, version] : g.opset_imports) {
    auto* op = model->add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  for (const auto& [k, v] : g.metadata) {
    auto* p = model->add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  auto* gp = model->mutable_graph();
  write_graph(g, g.inputs.size(), gp);
  return export_initializers(g, gp, writer, threshold);
}

// Everything of `g` but the initializers' contents (added empty, in order);
// only the first `formal_inputs` inputs are listed, the rest are a body's
// outer-scope names, which stay free names.
static void write_graph(const ir::Graph& g, size_t formal_inputs, onnx::GraphProto* gp) {
  gp->set_name(g.name);
  std::set<const ir::Value*> listed;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Value* v = g.inputs[i];
    if (i < formal_inputs) write_value_info(*v, gp->add_input());
    listed.insert(v);
  }
  for (const ir::Value* v : g.outputs) {
    write_value_info(*v, gp->add_output());
    listed.insert(v);
  }
  for (const ir::Value* v : g.initializers()) {
    gp->add_initializer();
    listed.insert(v);
  }
  for (const auto& n : g.nodes()) {
    auto* np = gp->add_node();
    np->set_name(n->name);
    np->set_op_type(n->op_type);
    if (!n->domain.empty()) np->set_domain(n->domain);
    if (!n->doc.empty()) np->set_doc_string(n->doc);
    for (const ir::Value* v : n->inputs) np->add_input(v ? v->name() : "");
    for (const ir::Value* v : n->outputs) np->add_output(v ? v->name() : "");
    for (const auto& [key, a] : n->attributes) write_attribute(key, a, np->add_attribute());
    for (const ir::Value* v : n->outputs) {
      // The ONNX checker requires a shape in every value_info it sees, so
      // values whose shape is unknown are left to the runtime's inference.
      if (v && !listed.count(v) && v->dtype != DType::Undefined && v->has_shape) {
        write_value_info(*v, gp->add_value_info());
        listed.insert(v);
      }
    }
  }
}

Expected<std::string> export_subgraph(const Subgraph& sub) {
  onnx::GraphProto gp;
  write_graph(*sub.graph, sub.formal_inputs, &gp);
  QT_RETURN_IF_ERROR(export_initializers(*sub.graph, &gp, nullptr, 0));
  std::string bytes;
  if (!gp.SerializeToString(&bytes)) return Status::internal("serializing subgraph '" + sub.graph->name + "' failed");
  return bytes;
}

std::string external_data_path(const std::string& path) { return path + ".data"; }

Status save_model(const ir::Graph& graph, const std::string& path, const SaveOptions& o) {
  io::ExternalDataWriter* writer = o.writer;
  bool external = o.external == ExternalData::Always;
  if (o.external == ExternalData::Auto) {
    int64_t total = 0;
    for (const ir::Value* v : graph.initializers()) total += static_cast<int64_t>(v->constant->byte_size());
    external = total > kAutoExternalBytes || (writer && writer->bytes_written() > 0);
  }
  std::unique_ptr<io::ExternalDataWriter> own;
  if (external && !writer) {
    QT_ASSIGN_OR_RETURN(own, io::ExternalDataWriter::create(external_data_path(path)));
    writer = own.get();
  }
  onnx::ModelProto model;
  QT_RETURN_IF_ERROR(export_model(graph, &model, external ? writer : nullptr, o.threshold));
  // Protobuf serializes at most 2 GiB (INT_MAX bytes) into one message.
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return Status::bad_input(path + ": the model is larger than protobuf's 2 GiB limit; write its weights as external "
                             "data (--external-data auto or always)");
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return Status::internal(path + ": serializing the model failed");
  if (!external) return write_file_atomic(path, bytes);
  // The model goes to a temporary file first, then the data file and the
  // model take their names: a failure before the renames leaves neither.
  QT_ASSIGN_OR_RETURN(std::string tmp, write_temp_beside(path, bytes));
  if (Status st = writer->commit(); !st) {
    ::unlink(tmp.c_str());
    return st;
  }
  Status st = rename_into_place(tmp, path);
  if (!st) ::unlink(writer->path().c_str());  // no data file without its model
  return st;
}

}  // namespace quant::onnx_io
