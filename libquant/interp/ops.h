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
// shape-index (ops-shape): ops_shape.cpp, ops_generate.cpp, ops_slice.cpp,
// ops_index.cpp, ops_resize.cpp, ops_conv_transpose.cpp, ops_pool.cpp
KernelResult make_squeeze(const KernelContext&);
KernelResult make_unsqueeze(const KernelContext&);
KernelResult make_shape(const KernelContext&);
KernelResult make_size(const KernelContext&);
KernelResult make_expand(const KernelContext&);
KernelResult make_tile(const KernelContext&);
KernelResult make_constant_of_shape(const KernelContext&);
KernelResult make_eye_like(const KernelContext&);
KernelResult make_range(const KernelContext&);
KernelResult make_slice(const KernelContext&);
KernelResult make_split(const KernelContext&);
KernelResult make_pad(const KernelContext&);
KernelResult make_depth_to_space(const KernelContext&);
KernelResult make_space_to_depth(const KernelContext&);
KernelResult make_reverse_sequence(const KernelContext&);
KernelResult make_gather(const KernelContext&);
KernelResult make_gather_elements(const KernelContext&);
KernelResult make_gather_nd(const KernelContext&);
KernelResult make_scatter_elements(const KernelContext&);
KernelResult make_scatter_nd(const KernelContext&);
KernelResult make_one_hot(const KernelContext&);
KernelResult make_non_zero(const KernelContext&);
KernelResult make_compress(const KernelContext&);
KernelResult make_unique(const KernelContext&);
KernelResult make_global_maxpool(const KernelContext&);
KernelResult make_global_lppool(const KernelContext&);
KernelResult make_lppool(const KernelContext&);
KernelResult make_maxunpool(const KernelContext&);
KernelResult make_conv_transpose(const KernelContext&);
KernelResult make_resize(const KernelContext&);
KernelResult make_upsample(const KernelContext&);

// auto_pad attribute of Conv and the pools.
Expected<kernels::AutoPad> parse_auto_pad(const ir::Node& node);

// Normalizes a possibly negative axis against `rank`; error names the node.
Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);

}  // namespace quant::interp
