// libFuzzer target: the whole model path of the three tools on one hostile
// ModelProto: import (+ verify), interpreter prepare, one run on zero inputs
// of the declared shapes with a profiling observer (as qprofile), QDQ insertion
// from that profile (as qconvert), export and re-import of the result; and
// qrun's default path on the same model: lowering of Q/DQ patterns to integer
// ops, then prepare and one run.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "libquant/interp/kernel.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/lower_qdq.h"
#include "libquant/passes/qdq.h"
#include "libquant/profile/profile.h"

namespace {

void require_bad_input(const quant::Status& s) {
  // Hostile input must be refused as bad input; anything else is a bug.
  if (s.code() != quant::StatusCode::kBadInput) std::abort();
}

// Zero tensors of the graph inputs' declared shapes (symbolic dims as 1).
quant::Expected<std::vector<quant::Tensor>> zero_inputs(const quant::ir::Graph& g) {
  std::vector<quant::Tensor> inputs;
  for (const quant::ir::Value* v : g.inputs) {
    quant::Dims shape;
    for (int64_t d : v->shape) shape.push_back(d < 0 ? 1 : d);
    quant::DType dtype = v->dtype == quant::DType::Undefined ? quant::DType::Float32 : v->dtype;
    QT_ASSIGN_OR_RETURN(auto t, quant::Tensor::create(dtype, shape));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// qrun's default path: lower Q/DQ patterns to integer ops, prepare, run.
void run_lowered(const onnx::ModelProto& model) {
  auto graph = quant::onnx_io::import_model(model, "/nonexistent/qtool-fuzz-model");
  if (!graph) std::abort();  // the same bytes imported once already
  quant::passes::LowerOptions lo;
  lo.target = quant::passes::LowerTarget::Interpreter;
  lo.has_kernel = [](const std::string& domain, const std::string& op) {
    return quant::interp::find_kernel_factory(domain, op) != nullptr;
  };
  auto lowered = quant::passes::lower_qdq(**graph, lo);
  if (!lowered) return require_bad_input(lowered.status());
  auto session = quant::interp::Session::create(**graph);
  if (!session) return require_bad_input(session.status());
  auto inputs = zero_inputs(**graph);
  if (!inputs) return require_bad_input(inputs.status());
  auto outs = (*session)->run(*inputs);
  if (!outs) return require_bad_input(outs.status());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Small tensors only: the fuzzer's memory and time budgets are per input.
  quant::set_max_tensor_bytes(int64_t{1} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  auto graph = quant::onnx_io::import_model(model, "/nonexistent/qtool-fuzz-model");
  if (!graph) return require_bad_input(graph.status()), 0;
  quant::ir::Graph& g = **graph;
  run_lowered(model);

  auto session = quant::interp::Session::create(g);
  if (!session) return require_bad_input(session.status()), 0;

  auto inputs = zero_inputs(g);
  if (!inputs) return require_bad_input(inputs.status()), 0;
  quant::profile::Profile profile;
  profile.bins = 16;
  auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
    if (t.dtype() != quant::DType::Float32) return;
    auto it = profile.tensors.try_emplace(v.name(), quant::profile::TensorProfile{"float32", t.shape(),
                                                                                  quant::profile::Histogram(16)}).first;
    it->second.hist.add(t.data<float>(), t.size());
  };
  auto outs = (*session)->run(*inputs, observe);
  if (!outs) return require_bad_input(outs.status()), 0;

  quant::passes::QuantizeOptions opt;
  auto report = quant::passes::insert_qdq(g, profile, opt);
  if (!report) return require_bad_input(report.status()), 0;
  onnx::ModelProto exported;
  quant::onnx_io::export_model(g, &exported);
  auto again = quant::onnx_io::import_model(exported, "/nonexistent/qtool-fuzz-model");
  if (!again) std::abort();  // qconvert must never write a model qtool cannot read
  return 0;
}
