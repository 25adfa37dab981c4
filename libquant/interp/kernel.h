// The interface every interpreter kernel implements. A kernel is created once
// per node at prepare time (attributes parsed and validated there) and then
// run once per sample.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/interp/saturation.h"
#include "libquant/ir/graph.h"
#include "libquant/kernels/qdot_sat16.h"

namespace quant::interp {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs[i]` is nullptr for an omitted optional input. The kernel sizes and
  // fills `outputs` (one per node output). Shape errors name the node.
  virtual Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const = 0;
  // Names of values of the enclosing graph the kernel reads besides the
  // node's inputs: the outer-scope values of If/Loop/Scan bodies. The Session
  // resolves them at prepare time and passes them, in this order, after the
  // node's inputs in `inputs`.
  virtual std::vector<std::string> implicit_inputs() const { return {}; }
  // Whether output 0 may take input i's memory (PlanOptions::in_place): the
  // Session then passes the input's tensor itself as the output,
  // inputs[i] == &outputs[0], when nothing reads the input later and it has
  // the output's dtype and element count. A kernel that says yes keeps that
  // memory (reuse_or_create keeps a tensor of the right dtype and size) and
  // on every path writes y[j] only from elements j of that input (an
  // element-wise op, read before written); it must not move outputs[0] away
  // while it still reads the input.
  virtual bool may_overwrite_input(size_t i) const {
    (void)i;
    return false;
  }
  // Whether output 0 is always input 0's elements in order under another
  // shape (Reshape, Flatten, Squeeze, Unsqueeze): then in place needs no
  // check that the other inputs (a shape, axes) broadcast into input 0, and
  // the kernel, handed input 0's tensor as its output, only changes its shape.
  virtual bool reshapes_input() const { return false; }
};

// How integer kernels turn an int32 accumulator into the output's integer
// type (DESIGN "Numerics"):
//  - Float: y = saturate(round_half_to_even(acc * M) + zp) with M = s_in*s_w/s_out
//    in float32, as ONNX Runtime's CPU kernels (MLAS) do. The default.
//  - FixedPoint: M as an int32 multiplier and a right shift, with gemmlowp /
//    TFLite rounding (SaturatingRoundingDoublingHighMul + RoundingDivideByPOT),
//    for integer-only targets (qrun --requant fixed-point).
enum class Requant { Float, FixedPoint };

// Choices fixed for a whole session; kernels read them at prepare time.
struct SessionOptions {
  Requant requant = Requant::Float;
  int threads = 1;  // threads a kernel may use (qrun --threads)
  // How 8-bit dot products accumulate (qrun --target, DESIGN "Targets"):
  // exactly in int32, or as ONNX Runtime on x86 without VNNI does (uint8 x
  // int8 pairs saturating to int16, kernels/qdot_sat16.h) in QLinearConv,
  // QLinearMatMul, MatMulInteger, QGemm and DynamicQuantizeLSTM.
  kernels::DotArithmetic dot = kernels::DotArithmetic::Exact;
  // The target rewrites int8 activations of fused Q/DQ patterns to uint8
  // before its integer kernels (nodes lowered from QDQ whose activation's
  // Q -> DQ pair ONNX Runtime rewrites carry qdq_fused = 1, lower_qdq.cpp).
  bool qdq_int8_activations_as_uint8 = false;
  // When set, kernels computing a saturating dot product add their pair
  // counts here under the node's name.
  std::shared_ptr<SaturationLog> saturation;
  // After each step, the mapped weights of 1 MiB or more it read give their
  // pages back (MappedRegion::release_pages), so a float run over a model
  // larger than memory holds about one weight at a time (qprofile, qconvert's
  // calibration; DESIGN "Large models"). Each run then reads them from the
  // page cache again, so qrun, which may run many times, leaves it off.
  bool release_mapped_weights = false;
};

// Everything a kernel factory may read: the node and the model's opset for its domain.
struct KernelContext {
  const ir::Node& node;
  int64_t opset;
  // The graph holding the node (opset imports for subgraph bodies); set by
  // the Session, may be null elsewhere.
  const ir::Graph* graph = nullptr;
  SessionOptions options{};
};

using KernelFactory = Expected<std::unique_ptr<Kernel>> (*)(const KernelContext&);

// The factory for (domain, op_type) at `opset`, or nullptr when qtool has none.
KernelFactory find_kernel_factory(const std::string& domain, const std::string& op_type);

// Helpers for kernel implementations.
Status require_inputs(const ir::Node& node, std::span<const Tensor* const> inputs, size_t min_count);
Status require_dtype(const ir::Node& node, const Tensor& t, DType want, const char* what);

}  // namespace quant::interp
