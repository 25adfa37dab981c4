// Kernel factories, one per ONNX operator the interpreter runs. The table in
// kernel_table.cpp maps (domain, op_type) to these; each family lives in its
// own ops_*.cpp file.
#pragma once

#include <utility>

#include "libquant/interp/kernel.h"
#include "libquant/kernels/shape_util.h"

namespace quant::interp {

// A kernel whose run() is a callable built by the factory (attributes already
// parsed and captured).
template <class F>
class FnKernel final : public Kernel {
 public:
  explicit FnKernel(F fn) : fn_(std::move(fn)) {}
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const override {
    return fn_(inputs, outputs);
  }

 private:
  F fn_;
};

template <class F>
Expected<std::unique_ptr<Kernel>> make_kernel(F fn) {
  return std::unique_ptr<Kernel>(new FnKernel<F>(std::move(fn)));
}

using KernelResult = Expected<std::unique_ptr<Kernel>>;

// ops_nn.cpp
KernelResult make_conv(const KernelContext&);
KernelResult make_gemm(const KernelContext&);
KernelResult make_matmul(const KernelContext&);
KernelResult make_batchnorm(const KernelContext&);
KernelResult make_softmax(const KernelContext&);
// ops_pool.cpp
KernelResult make_maxpool(const KernelContext&);
KernelResult make_averagepool(const KernelContext&);
KernelResult make_global_averagepool(const KernelContext&);
// ops_elementwise.cpp
KernelResult make_add(const KernelContext&);
KernelResult make_sub(const KernelContext&);
KernelResult make_mul(const KernelContext&);
KernelResult make_div(const KernelContext&);
KernelResult make_relu(const KernelContext&);
KernelResult make_clip(const KernelContext&);
KernelResult make_sigmoid(const KernelContext&);
// ops_shape.cpp
KernelResult make_reshape(const KernelContext&);
KernelResult make_flatten(const KernelContext&);
KernelResult make_transpose(const KernelContext&);
KernelResult make_concat(const KernelContext&);
KernelResult make_identity(const KernelContext&);
KernelResult make_constant(const KernelContext&);
// ops_quant.cpp
KernelResult make_quantize_linear(const KernelContext&);
KernelResult make_dequantize_linear(const KernelContext&);

// auto_pad attribute of Conv and the pools.
Expected<kernels::AutoPad> parse_auto_pad(const ir::Node& node);

// Spatial attributes (pads, strides, dilations, kernel_shape) beyond this are
// refused, so that the output-size arithmetic of Conv and the pools cannot
// overflow int64 (the output itself then meets the tensor size guard).
inline constexpr int64_t kMaxSpatialAttribute = int64_t{1} << 31;
// bad_input naming `what` when a value of `values` exceeds kMaxSpatialAttribute.
Status check_spatial_attribute(const ir::Node& node, const char* what, const Dims& values);

// Normalizes a possibly negative axis against `rank`; error names the node.
Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);

}  // namespace quant::interp
