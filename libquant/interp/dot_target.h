// Which integer products compute as a saturating target does
// (SessionOptions::dot = U8S8PairsSaturateInt16, kernels/qdot_sat16.h), in
// the kernels ONNX Runtime runs on u8 x s8 MLAS GEMMs: QLinearConv (not
// depthwise), QLinearMatMul, MatMulInteger, com.microsoft QGemm and
// DynamicQuantizeLSTM.
#pragma once

#include <memory>
#include <string>

#include "libquant/core/dtype.h"
#include "libquant/interp/kernel.h"
#include "libquant/kernels/qdot_sat16.h"

namespace quant::interp {

struct DotTarget {
  bool saturating = false;
  bool int8_as_uint8 = false;  // this node's int8 activations are rewritten to uint8 first
  std::shared_ptr<SaturationLog> log;
  std::string node;

  // True when the product of an A operand of type `a` (an activation) and a
  // B operand of type `b` (`b_activation`: not a constant weight) runs
  // saturating: the target's u8 x s8 kernel sees uint8 A bytes and int8 B
  // bytes. ONNX Runtime's rewrite applies to activations only; ConvInteger
  // is absent because ONNX Runtime 1.20's CPU ConvInteger takes uint8
  // weights only.
  bool applies(DType a, DType b, bool b_activation) const {
    if (!saturating) return false;
    const bool a_u8 = a == DType::UInt8 || (a == DType::Int8 && int8_as_uint8);
    const bool b_s8 = b == DType::Int8 && !(b_activation && int8_as_uint8);
    return a_u8 && b_s8;
  }
  void record(const kernels::SaturationStats& s) const {
    if (log) log->add(node, s);
  }
};

inline DotTarget dot_target(const KernelContext& ctx) {
  DotTarget t;
  // A Conv ONNX Runtime leaves in float (its Relu/Clip before the Q is not
  // implied by saturation, passes/lower_qdq.cpp) multiplies nothing in 8 bits.
  const ir::Attribute* runtime_float = ctx.node.find_attribute("qdq_runtime_float");
  t.saturating = ctx.options.dot == kernels::DotArithmetic::U8S8PairsSaturateInt16 && !(runtime_float && runtime_float->i != 0);
  const ir::Attribute* fused = ctx.node.find_attribute("qdq_fused");
  t.int8_as_uint8 = ctx.options.qdq_int8_activations_as_uint8 && fused && fused->i != 0;
  t.log = ctx.options.saturation;
  t.node = ctx.node.name;
  return t;
}

}  // namespace quant::interp
