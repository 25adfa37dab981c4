// ONNX ModelProto <-> ir::Graph.
#pragma once

#include <memory>
#include <string>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace quant::onnx_io {

// Reads and imports a model file; errors name the file.
Expected<std::unique_ptr<ir::Graph>> load_model(const std::string& path);
// `model_dir` resolves external data.
Expected<std::unique_ptr<ir::Graph>> import_model(const onnx::ModelProto& model, const std::string& model_dir);

void export_model(const ir::Graph& graph, onnx::ModelProto* model);
// Serializes and writes atomically.
Status save_model(const ir::Graph& graph, const std::string& path);

}  // namespace quant::onnx_io
