// Kernels that absorb the activation after them (Session fusion, PlanOptions::fuse):
// the Session builds these instead of two kernels when nothing else reads the
// value in between, and drops the activation's node from the run.
#pragma once

#include "libquant/interp/ops.h"
#include "libquant/kernels/conv_fast.h"

namespace quant::interp {

// Conv (float) whose output is clamped to [act.lo, act.hi] in the GEMM /
// depthwise epilogue: Conv -> Relu (lo 0, hi +inf) or Conv -> Clip. With
// `residual`, the kernel takes a 4th input (after the optional bias, index 3),
// the other operand of an Add after the Conv, added before the clamp:
// Conv -> Add (-> Relu/Clip). An operand of another shape than the Conv's
// output (broadcasting) or type is handled as the Add itself would.
KernelResult make_conv_fused(const KernelContext& ctx, const kernels::ConvActivation& act, bool residual = false);

// Add whose output is clamped the same way (the residual Add -> Relu of
// ResNets). Float32 inputs of one shape take a single vectorized pass; other
// cases run Add and then the clamp.
KernelResult make_add_fused(const KernelContext& ctx, const kernels::ConvActivation& act);

}  // namespace quant::interp
