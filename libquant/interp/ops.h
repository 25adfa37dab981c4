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
// reduce-norm (ops-reduce): ops_reduce.cpp, ops_softmax.cpp, ops_norm.cpp,
// ops_linalg.cpp. make_batchnorm and make_softmax (declared above) moved to
// ops_norm.cpp and ops_softmax.cpp.
KernelResult make_reduce_sum(const KernelContext&);
KernelResult make_reduce_mean(const KernelContext&);
KernelResult make_reduce_max(const KernelContext&);
KernelResult make_reduce_min(const KernelContext&);
KernelResult make_reduce_prod(const KernelContext&);
KernelResult make_reduce_l1(const KernelContext&);
KernelResult make_reduce_l2(const KernelContext&);
KernelResult make_reduce_log_sum(const KernelContext&);
KernelResult make_reduce_log_sum_exp(const KernelContext&);
KernelResult make_reduce_sum_square(const KernelContext&);
KernelResult make_argmax(const KernelContext&);
KernelResult make_argmin(const KernelContext&);
KernelResult make_cumsum(const KernelContext&);
KernelResult make_topk(const KernelContext&);
KernelResult make_log_softmax(const KernelContext&);
KernelResult make_hardmax(const KernelContext&);
KernelResult make_nll_loss(const KernelContext&);
KernelResult make_softmax_cross_entropy_loss(const KernelContext&);
KernelResult make_layer_norm(const KernelContext&);
KernelResult make_instance_norm(const KernelContext&);
KernelResult make_lrn(const KernelContext&);
KernelResult make_mean_variance_norm(const KernelContext&);
KernelResult make_dropout(const KernelContext&);
KernelResult make_einsum(const KernelContext&);
KernelResult make_det(const KernelContext&);
KernelResult make_trilu(const KernelContext&);
// Gemm / MatMul for element types other than float32 (called by ops_nn.cpp).
Status run_gemm_any_type(const ir::Node& node, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                         const Tensor& a, const Tensor& b, double beta, const Tensor* c, int64_t c_rows, int64_t c_cols,
                         Tensor& y);
Status run_matmul_any_type(const ir::Node& node, const Tensor& a, const Tensor& b, Tensor& y);

// auto_pad attribute of Conv and the pools.
Expected<kernels::AutoPad> parse_auto_pad(const ir::Node& node);

// Normalizes a possibly negative axis against `rank`; error names the node.
Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);

}  // namespace quant::interp
