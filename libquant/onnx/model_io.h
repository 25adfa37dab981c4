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

namespace quant::io {
class ExternalDataWriter;
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

// The inverse of import_subgraph, for passes that rewrite a body (passes/
// subgraphs.h): the GraphProto bytes of `sub`, whose first `formal_inputs`
// inputs are the declared ones and the rest outer-scope names, written back
// as free names (not inputs); initializers inline.
Expected<std::string> export_subgraph(const Subgraph& sub);

void export_model(const ir::Graph& graph, onnx::ModelProto* model);
// The same, with initializers of at least `threshold` bytes (and every one
// `writer` already holds) stored in `writer`'s external data file.
Status export_model(const ir::Graph& graph, onnx::ModelProto* model, io::ExternalDataWriter* writer, int64_t threshold);

// Where save_model puts initializers (DESIGN "Large models"): in the .onnx
// file (Never), in an external data file beside it named "<path>.data"
// (Always), or in one when the model's initializers exceed kAutoExternalBytes
// or `writer` already holds some of them (Auto).
enum class ExternalData { Auto, Always, Never };
inline constexpr int64_t kAutoExternalBytes = int64_t{1} << 30;
struct SaveOptions {
  ExternalData external = ExternalData::Auto;
  // The smallest initializer, in bytes, that goes to the external data file
  // (ONNX's convert_model_to_external_data uses 1024 too).
  int64_t threshold = 1024;
  // A writer for "<path>.data" that passes already spilled tensors into
  // (qconvert's streaming conversion); save_model commits it.
  io::ExternalDataWriter* writer = nullptr;
};
// Serializes and writes atomically: the model and its data file appear
// together, or neither does.
Status save_model(const ir::Graph& graph, const std::string& path, const SaveOptions& options = {});
// The name of the external data file save_model writes beside `path`.
std::string external_data_path(const std::string& path);

}  // namespace quant::onnx_io
