#include "libquant/tune/run_setup.h"

#include "libquant/interp/kernel.h"
#include "libquant/passes/subgraphs.h"

namespace quant::tune {

RunSetup run_setup(const target::TargetSpec* target, std::optional<interp::Requant> requant, int threads) {
  RunSetup s;
  interp::Requant mode = interp::Requant::Float;
  if (target && target->requant == kernels::RequantMode::FixedPoint) mode = interp::Requant::FixedPoint;
  if (requant) mode = *requant;
  s.lower.target = passes::LowerTarget::Interpreter;
  // Without a target qrun computes as ONNX Runtime does; a target says
  // whether its Softmax is ONNX Runtime's QLinearSoftmax (compute.softmax).
  s.lower.onnxruntime_softmax = !target || target->onnxruntime_qlinear_softmax;
  // Integer-only arithmetic (fixed-point requantization, TFLite 16x8):
  // 16-bit Conv / MatMul / Gemm run on int64 accumulators, not in float.
  s.lower.wide_products = mode == interp::Requant::FixedPoint;
  s.lower.has_kernel = [](const std::string& domain, const std::string& op) {
    return interp::find_kernel_factory(domain, op) != nullptr;
  };
  s.session.requant = mode;
  s.session.threads = threads;
  if (target) {
    s.session.dot = target->dot;
    s.session.qdq_int8_activations_as_uint8 = target->qdq_int8_activations_as_uint8;
  }
  return s;
}

Expected<Prepared> prepare(std::unique_ptr<ir::Graph> graph, const RunSetup& setup) {
  Prepared p;
  if (setup.lower_qdq) QT_RETURN_IF_ERROR(passes::lower_qdq_with_bodies(*graph, setup.lower).status());
  QT_ASSIGN_OR_RETURN(p.session, interp::Session::create(*graph, setup.session, setup.plan));
  p.graph = std::move(graph);
  return p;
}

}  // namespace quant::tune
