// Kernel factories, one per ONNX operator the interpreter runs. The table in
// kernel_table.cpp maps (domain, op_type) to these; each family lives in its
// own ops_*.cpp file.
#pragma once

#include <utility>

#include "libquant/interp/kernel.h"
#include "libquant/kernels/conv.h"
#include "libquant/kernels/pool.h"
#include "libquant/kernels/shape_util.h"

namespace quant::interp {

// A kernel whose run() is a callable built by the factory (attributes already
// parsed and captured).
// `in_place_inputs`: bit i set when output 0 may take input i's memory
// (Kernel::may_overwrite_input); `reshapes`: Kernel::reshapes_input.
template <class F>
class FnKernel final : public Kernel {
 public:
  explicit FnKernel(F fn, uint32_t in_place_inputs = 0, bool reshapes = false)
      : fn_(std::move(fn)), in_place_inputs_(in_place_inputs), reshapes_(reshapes) {}
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const override {
    return fn_(inputs, outputs);
  }
  bool may_overwrite_input(size_t i) const override { return i < 32 && (in_place_inputs_ >> i & 1u) != 0; }
  bool reshapes_input() const override { return reshapes_; }

 private:
  F fn_;
  uint32_t in_place_inputs_;
  bool reshapes_;
};

template <class F>
Expected<std::unique_ptr<Kernel>> make_kernel(F fn, uint32_t in_place_inputs = 0) {
  return std::unique_ptr<Kernel>(new FnKernel<F>(std::move(fn), in_place_inputs));
}

// A kernel whose output 0 is input 0 reshaped (Kernel::reshapes_input): in
// place on input 0 whenever the plan allows.
template <class F>
Expected<std::unique_ptr<Kernel>> make_reshaping_kernel(F fn) {
  return std::unique_ptr<Kernel>(new FnKernel<F>(std::move(fn), 1u, true));
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
// ops_lookup.cpp: ai.qtool QLinearLookup
KernelResult make_qlinear_lookup(const KernelContext&);
// integer kernels of the QOperator form (intk): ops_qlinear_conv.cpp,
// ops_qlinear_matmul.cpp, ops_qlinear_eltwise.cpp, ops_qlinear_pool.cpp
KernelResult make_qlinear_conv(const KernelContext&);
KernelResult make_qlinear_matmul(const KernelContext&);
KernelResult make_qlinear_add(const KernelContext&);
KernelResult make_qlinear_mul(const KernelContext&);
KernelResult make_qlinear_sigmoid(const KernelContext&);
KernelResult make_qlinear_leaky_relu(const KernelContext&);
KernelResult make_qlinear_concat(const KernelContext&);
KernelResult make_qlinear_averagepool(const KernelContext&);
KernelResult make_qlinear_global_averagepool(const KernelContext&);
KernelResult make_qlinear_softmax(const KernelContext&);
// ops_qgemm.cpp: com.microsoft QGemm (what the lowering turns Gemm into)
KernelResult make_qgemm(const KernelContext&);
// elementwise (ops-elem): ops_elementwise.cpp, ops_unary.cpp, ops_logic.cpp,
// ops_cast.cpp (Add/Sub/Mul/Div above are in ops_elementwise.cpp, Relu/Clip/
// Sigmoid in ops_unary.cpp)
KernelResult make_mod(const KernelContext&);
KernelResult make_pow(const KernelContext&);
KernelResult make_bitshift(const KernelContext&);
KernelResult make_prelu(const KernelContext&);
KernelResult make_min(const KernelContext&);
KernelResult make_max(const KernelContext&);
KernelResult make_sum(const KernelContext&);
KernelResult make_mean(const KernelContext&);
KernelResult make_abs(const KernelContext&);
KernelResult make_neg(const KernelContext&);
KernelResult make_sign(const KernelContext&);
KernelResult make_floor(const KernelContext&);
KernelResult make_ceil(const KernelContext&);
KernelResult make_round(const KernelContext&);
KernelResult make_sqrt(const KernelContext&);
KernelResult make_reciprocal(const KernelContext&);
KernelResult make_exp(const KernelContext&);
KernelResult make_log(const KernelContext&);
KernelResult make_tanh(const KernelContext&);
KernelResult make_erf(const KernelContext&);
KernelResult make_sin(const KernelContext&);
KernelResult make_cos(const KernelContext&);
KernelResult make_tan(const KernelContext&);
KernelResult make_asin(const KernelContext&);
KernelResult make_acos(const KernelContext&);
KernelResult make_atan(const KernelContext&);
KernelResult make_sinh(const KernelContext&);
KernelResult make_cosh(const KernelContext&);
KernelResult make_asinh(const KernelContext&);
KernelResult make_acosh(const KernelContext&);
KernelResult make_atanh(const KernelContext&);
KernelResult make_softplus(const KernelContext&);
KernelResult make_softsign(const KernelContext&);
KernelResult make_mish(const KernelContext&);
KernelResult make_leaky_relu(const KernelContext&);
KernelResult make_elu(const KernelContext&);
KernelResult make_selu(const KernelContext&);
KernelResult make_celu(const KernelContext&);
KernelResult make_thresholded_relu(const KernelContext&);
KernelResult make_shrink(const KernelContext&);
// ops_spectral.cpp: signal processing (opset 17)
KernelResult make_dft(const KernelContext&);
KernelResult make_stft(const KernelContext&);
KernelResult make_hann_window(const KernelContext&);
KernelResult make_hamming_window(const KernelContext&);
KernelResult make_blackman_window(const KernelContext&);
KernelResult make_mel_weight_matrix(const KernelContext&);
// ops_sequence.cpp: sequence and optional values (SequenceMap in ops_control.cpp)
KernelResult make_sequence_empty(const KernelContext&);
KernelResult make_sequence_construct(const KernelContext&);
KernelResult make_sequence_insert(const KernelContext&);
KernelResult make_sequence_at(const KernelContext&);
KernelResult make_sequence_erase(const KernelContext&);
KernelResult make_sequence_length(const KernelContext&);
KernelResult make_split_to_sequence(const KernelContext&);
KernelResult make_concat_from_sequence(const KernelContext&);
KernelResult make_optional(const KernelContext&);
KernelResult make_optional_has_element(const KernelContext&);
KernelResult make_optional_get_element(const KernelContext&);
KernelResult make_sequence_map(const KernelContext&);
// ops_random.cpp: generator ops
KernelResult make_bernoulli(const KernelContext&);
KernelResult make_random_uniform_like(const KernelContext&);
KernelResult make_random_uniform(const KernelContext&);
// ops_detection.cpp: detection and sampling (NonMaxSuppression, RoiAlign, GridSample)
KernelResult make_non_max_suppression(const KernelContext&);
KernelResult make_roi_align(const KernelContext&);
KernelResult make_grid_sample(const KernelContext&);
KernelResult make_hard_sigmoid(const KernelContext&);
KernelResult make_hard_swish(const KernelContext&);
KernelResult make_gelu(const KernelContext&);
KernelResult make_isnan(const KernelContext&);
KernelResult make_isinf(const KernelContext&);
KernelResult make_not(const KernelContext&);
KernelResult make_and(const KernelContext&);
KernelResult make_or(const KernelContext&);
KernelResult make_xor(const KernelContext&);
KernelResult make_equal(const KernelContext&);
KernelResult make_less(const KernelContext&);
KernelResult make_greater(const KernelContext&);
KernelResult make_less_or_equal(const KernelContext&);
KernelResult make_greater_or_equal(const KernelContext&);
KernelResult make_where(const KernelContext&);
KernelResult make_cast(const KernelContext&);
KernelResult make_castlike(const KernelContext&);
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
// rnn-control (ops-ctrl): ops_rnn.cpp, ops_control.cpp
KernelResult make_rnn(const KernelContext&);
KernelResult make_gru(const KernelContext&);
KernelResult make_lstm(const KernelContext&);
// ops_rnn_dynamic.cpp
KernelResult make_dynamic_quantize_lstm(const KernelContext&);
KernelResult make_if(const KernelContext&);
KernelResult make_loop(const KernelContext&);
KernelResult make_scan(const KernelContext&);
// dynamic quantization: ops_dynamic.cpp
KernelResult make_dynamic_quantize_linear(const KernelContext&);
KernelResult make_matmul_integer(const KernelContext&);
KernelResult make_conv_integer(const KernelContext&);
KernelResult make_matmul_nbits(const KernelContext&);

// auto_pad attribute of Conv and the pools.
Expected<kernels::AutoPad> parse_auto_pad(const ir::Node& node);

// Spatial attributes (pads, strides, dilations, kernel_shape) beyond this are
// refused, so that the output-size arithmetic of Conv and the pools cannot
// overflow int64 (the output itself then meets the tensor size guard).
inline constexpr int64_t kMaxSpatialAttribute = int64_t{1} << 31;
// bad_input naming `what` when a value of `values` exceeds kMaxSpatialAttribute.
Status check_spatial_attribute(const ir::Node& node, const char* what, const Dims& values);

// Conv attributes and geometry (ops_nn.cpp), shared by Conv and the integer
// convolutions (QLinearConv, ConvInteger).
struct ConvAttrs {
  kernels::AutoPad auto_pad;
  Dims dilations, kernel_shape, pads, strides;
  int64_t group;
};
Expected<ConvAttrs> parse_conv_attrs(const ir::Node& node);
// Geometry of ONNX Conv (opset 11) for x [N,C,spatial...] and w [M,C/group,k...].
Expected<kernels::ConvGeometry> conv_geometry(const ConvAttrs& a, const Tensor& x, const Tensor& w);

// Pooling attributes and geometry (ops_pool.cpp), shared by the float pools
// and QLinearAveragePool.
struct PoolAttrs {
  kernels::AutoPad auto_pad;
  bool ceil_mode;
  Dims kernel_shape, pads, strides, dilations;
};
Expected<PoolAttrs> parse_pool_attrs(const ir::Node& node);
Expected<kernels::PoolGeometry> pool_geometry(const ir::Node& node, const PoolAttrs& a, const Tensor& x);
Dims pool_output_dims(const kernels::PoolGeometry& g);

// Normalizes a possibly negative axis against `rank`; error names the node.
Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);
// Elements [start, start + len) of t along `axis` (in range; ops_sequence.cpp).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t start, int64_t len);

}  // namespace quant::interp
