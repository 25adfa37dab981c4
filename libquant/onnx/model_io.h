// ONNX ModelProto <-> ir::Graph.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace quant::onnx_io {

// Reads and imports a model file; errors name the file.
Expected<std::unique_ptr<ir::Graph>> load_model(const std::string& path);
// The same for a model file already read (qprofile also hashes the bytes);
// `path` names the file in errors and locates external data.
Expected<std::unique_ptr<ir::Graph>> load_model_from_bytes(std::string_view bytes, const std::string& path);
// `model_dir` resolves external data.
Expected<std::unique_ptr<ir::Graph>> import_model(const onnx::ModelProto& model, const std::string& model_dir);

// A control-flow body (If branch, Loop or Scan body), imported on its own for
// the interpreter; the node keeps the serialized GraphProto, so export round
// trips it untouched. ONNX lets a body read values of enclosing graphs by
// name: those names (first-use order, including names that nested bodies
// read) are `outer_names`, and become graph inputs after the body's
// `formal_inputs` declared ones.
struct Subgraph {
  std::unique_ptr<ir::Graph> graph;
  size_t formal_inputs = 0;
  std::vector<std::string> outer_names;
};
// `serialized_graph` is the bytes of a GRAPH attribute; the body uses the
// enclosing model's opset imports.
Expected<Subgraph> import_subgraph(const std::string& serialized_graph, const std::map<std::string, int64_t>& opset_imports);

void export_model(const ir::Graph& graph, onnx::ModelProto* model);
// Serializes and writes atomically.
Status save_model(const ir::Graph& graph, const std::string& path);

}  // namespace quant::onnx_io
