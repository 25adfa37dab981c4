#include <array>
#include <string_view>

#include "libquant/interp/ops.h"

namespace quant::interp {
namespace {

struct KernelEntry {
  std::string_view domain;
  std::string_view op_type;
  KernelFactory factory;
};

// The one place an operator is registered: adding an op is one row here, one
// factory in an ops_*.cpp file and its tests.
constexpr std::array kKernels = {
    KernelEntry{"", "Conv", make_conv},
    KernelEntry{"", "Gemm", make_gemm},
    KernelEntry{"", "MatMul", make_matmul},
    KernelEntry{"", "BatchNormalization", make_batchnorm},
    KernelEntry{"", "Softmax", make_softmax},
    KernelEntry{"", "MaxPool", make_maxpool},
    KernelEntry{"", "AveragePool", make_averagepool},
    KernelEntry{"", "GlobalAveragePool", make_global_averagepool},
    KernelEntry{"", "Add", make_add},
    KernelEntry{"", "Sub", make_sub},
    KernelEntry{"", "Mul", make_mul},
    KernelEntry{"", "Div", make_div},
    KernelEntry{"", "Relu", make_relu},
    KernelEntry{"", "Clip", make_clip},
    KernelEntry{"", "Sigmoid", make_sigmoid},
    KernelEntry{"", "Reshape", make_reshape},
    KernelEntry{"", "Flatten", make_flatten},
    KernelEntry{"", "Transpose", make_transpose},
    KernelEntry{"", "Concat", make_concat},
    KernelEntry{"", "Identity", make_identity},
    KernelEntry{"", "Constant", make_constant},
    KernelEntry{"", "QuantizeLinear", make_quantize_linear},
    KernelEntry{"", "DequantizeLinear", make_dequantize_linear},
    // ONNX Runtime's contrib forms, used for 16-bit types before opset 21.
    KernelEntry{"com.microsoft", "QuantizeLinear", make_quantize_linear},
    KernelEntry{"com.microsoft", "DequantizeLinear", make_dequantize_linear},
    // qtool's own: unary ops on quantized tensors as tables (ops_lookup.cpp).
    KernelEntry{"ai.qtool", "QLinearLookup", make_qlinear_lookup},
    KernelEntry{"com.microsoft", "QGemm", make_qgemm},
    // elementwise (ops-elem)
    KernelEntry{"", "Mod", make_mod},
    KernelEntry{"", "Pow", make_pow},
    KernelEntry{"", "BitShift", make_bitshift},
    KernelEntry{"", "PRelu", make_prelu},
    KernelEntry{"", "Min", make_min},
    KernelEntry{"", "Max", make_max},
    KernelEntry{"", "Sum", make_sum},
    KernelEntry{"", "Mean", make_mean},
    KernelEntry{"", "Abs", make_abs},
    KernelEntry{"", "Neg", make_neg},
    KernelEntry{"", "Sign", make_sign},
    KernelEntry{"", "Floor", make_floor},
    KernelEntry{"", "Ceil", make_ceil},
    KernelEntry{"", "Round", make_round},
    KernelEntry{"", "Sqrt", make_sqrt},
    KernelEntry{"", "Reciprocal", make_reciprocal},
    KernelEntry{"", "Exp", make_exp},
    KernelEntry{"", "Log", make_log},
    KernelEntry{"", "Tanh", make_tanh},
    KernelEntry{"", "Erf", make_erf},
    KernelEntry{"", "Sin", make_sin},
    KernelEntry{"", "Cos", make_cos},
    KernelEntry{"", "Tan", make_tan},
    KernelEntry{"", "Asin", make_asin},
    KernelEntry{"", "Acos", make_acos},
    KernelEntry{"", "Atan", make_atan},
    KernelEntry{"", "Sinh", make_sinh},
    KernelEntry{"", "Cosh", make_cosh},
    KernelEntry{"", "Asinh", make_asinh},
    KernelEntry{"", "Acosh", make_acosh},
    KernelEntry{"", "Atanh", make_atanh},
    KernelEntry{"", "Softplus", make_softplus},
    KernelEntry{"", "Softsign", make_softsign},
    KernelEntry{"", "Mish", make_mish},
    KernelEntry{"", "LeakyRelu", make_leaky_relu},
    KernelEntry{"", "Elu", make_elu},
    KernelEntry{"", "Selu", make_selu},
    KernelEntry{"", "Celu", make_celu},
    KernelEntry{"", "ThresholdedRelu", make_thresholded_relu},
    KernelEntry{"", "Shrink", make_shrink},
    KernelEntry{"", "HardSigmoid", make_hard_sigmoid},
    KernelEntry{"", "HardSwish", make_hard_swish},
    KernelEntry{"", "Gelu", make_gelu},
    KernelEntry{"", "IsNaN", make_isnan},
    KernelEntry{"", "IsInf", make_isinf},
    KernelEntry{"", "Not", make_not},
    KernelEntry{"", "And", make_and},
    KernelEntry{"", "Or", make_or},
    KernelEntry{"", "Xor", make_xor},
    KernelEntry{"", "Equal", make_equal},
    KernelEntry{"", "Less", make_less},
    KernelEntry{"", "Greater", make_greater},
    KernelEntry{"", "LessOrEqual", make_less_or_equal},
    KernelEntry{"", "GreaterOrEqual", make_greater_or_equal},
    KernelEntry{"", "Where", make_where},
    KernelEntry{"", "Cast", make_cast},
    KernelEntry{"", "CastLike", make_castlike},
    // reduce-norm (ops-reduce)
    KernelEntry{"", "ReduceSum", make_reduce_sum},
    KernelEntry{"", "ReduceMean", make_reduce_mean},
    KernelEntry{"", "ReduceMax", make_reduce_max},
    KernelEntry{"", "ReduceMin", make_reduce_min},
    KernelEntry{"", "ReduceProd", make_reduce_prod},
    KernelEntry{"", "ReduceL1", make_reduce_l1},
    KernelEntry{"", "ReduceL2", make_reduce_l2},
    KernelEntry{"", "ReduceLogSum", make_reduce_log_sum},
    KernelEntry{"", "ReduceLogSumExp", make_reduce_log_sum_exp},
    KernelEntry{"", "ReduceSumSquare", make_reduce_sum_square},
    KernelEntry{"", "ArgMax", make_argmax},
    KernelEntry{"", "ArgMin", make_argmin},
    KernelEntry{"", "CumSum", make_cumsum},
    KernelEntry{"", "TopK", make_topk},
    KernelEntry{"", "LogSoftmax", make_log_softmax},
    KernelEntry{"", "Hardmax", make_hardmax},
    KernelEntry{"", "NegativeLogLikelihoodLoss", make_nll_loss},
    KernelEntry{"", "SoftmaxCrossEntropyLoss", make_softmax_cross_entropy_loss},
    KernelEntry{"", "LayerNormalization", make_layer_norm},
    KernelEntry{"", "InstanceNormalization", make_instance_norm},
    KernelEntry{"", "LRN", make_lrn},
    KernelEntry{"", "MeanVarianceNormalization", make_mean_variance_norm},
    KernelEntry{"", "Dropout", make_dropout},
    KernelEntry{"", "Einsum", make_einsum},
    KernelEntry{"", "Det", make_det},
    KernelEntry{"", "Trilu", make_trilu},
    // shape-index (ops-shape)
    KernelEntry{"", "Squeeze", make_squeeze},
    KernelEntry{"", "Unsqueeze", make_unsqueeze},
    KernelEntry{"", "Shape", make_shape},
    KernelEntry{"", "Size", make_size},
    KernelEntry{"", "Expand", make_expand},
    KernelEntry{"", "Tile", make_tile},
    KernelEntry{"", "ConstantOfShape", make_constant_of_shape},
    KernelEntry{"", "EyeLike", make_eye_like},
    KernelEntry{"", "Range", make_range},
    KernelEntry{"", "Slice", make_slice},
    KernelEntry{"", "Split", make_split},
    KernelEntry{"", "Pad", make_pad},
    KernelEntry{"", "DepthToSpace", make_depth_to_space},
    KernelEntry{"", "SpaceToDepth", make_space_to_depth},
    KernelEntry{"", "ReverseSequence", make_reverse_sequence},
    KernelEntry{"", "Gather", make_gather},
    KernelEntry{"", "GatherElements", make_gather_elements},
    KernelEntry{"", "GatherND", make_gather_nd},
    KernelEntry{"", "ScatterElements", make_scatter_elements},
    KernelEntry{"", "Scatter", make_scatter_elements},
    KernelEntry{"", "ScatterND", make_scatter_nd},
    KernelEntry{"", "OneHot", make_one_hot},
    KernelEntry{"", "NonZero", make_non_zero},
    KernelEntry{"", "Compress", make_compress},
    KernelEntry{"", "Unique", make_unique},
    KernelEntry{"", "GlobalMaxPool", make_global_maxpool},
    KernelEntry{"", "GlobalLpPool", make_global_lppool},
    KernelEntry{"", "LpPool", make_lppool},
    KernelEntry{"", "MaxUnpool", make_maxunpool},
    KernelEntry{"", "ConvTranspose", make_conv_transpose},
    KernelEntry{"", "Resize", make_resize},
    KernelEntry{"", "Upsample", make_upsample},
    // signal processing (ops_spectral.cpp)
    KernelEntry{"", "DFT", make_dft},
    KernelEntry{"", "STFT", make_stft},
    KernelEntry{"", "HannWindow", make_hann_window},
    KernelEntry{"", "HammingWindow", make_hamming_window},
    KernelEntry{"", "BlackmanWindow", make_blackman_window},
    KernelEntry{"", "MelWeightMatrix", make_mel_weight_matrix},
    // sequences and optionals (ops_sequence.cpp; SequenceMap in ops_control.cpp)
    KernelEntry{"", "SequenceEmpty", make_sequence_empty},
    KernelEntry{"", "SequenceConstruct", make_sequence_construct},
    KernelEntry{"", "SequenceInsert", make_sequence_insert},
    KernelEntry{"", "SequenceAt", make_sequence_at},
    KernelEntry{"", "SequenceErase", make_sequence_erase},
    KernelEntry{"", "SequenceLength", make_sequence_length},
    KernelEntry{"", "SplitToSequence", make_split_to_sequence},
    KernelEntry{"", "ConcatFromSequence", make_concat_from_sequence},
    KernelEntry{"", "SequenceMap", make_sequence_map},
    KernelEntry{"", "Optional", make_optional},
    KernelEntry{"", "OptionalHasElement", make_optional_has_element},
    KernelEntry{"", "OptionalGetElement", make_optional_get_element},
    // generators (ops_random.cpp)
    KernelEntry{"", "Bernoulli", make_bernoulli},
    KernelEntry{"", "RandomUniformLike", make_random_uniform_like},
    KernelEntry{"", "RandomUniform", make_random_uniform},
    // detection and sampling (ops_detection.cpp)
    KernelEntry{"", "NonMaxSuppression", make_non_max_suppression},
    KernelEntry{"", "RoiAlign", make_roi_align},
    KernelEntry{"", "GridSample", make_grid_sample},
    // rnn-control (ops-ctrl)
    KernelEntry{"", "RNN", make_rnn},
    KernelEntry{"", "GRU", make_gru},
    KernelEntry{"", "LSTM", make_lstm},
    KernelEntry{"", "If", make_if},
    KernelEntry{"", "Loop", make_loop},
    KernelEntry{"", "Scan", make_scan},
    // integer kernels of the QOperator form (intk): ops_qlinear_*.cpp
    KernelEntry{"", "QLinearConv", make_qlinear_conv},
    KernelEntry{"", "QLinearMatMul", make_qlinear_matmul},
    KernelEntry{"com.microsoft", "QLinearAdd", make_qlinear_add},
    KernelEntry{"com.microsoft", "QLinearMul", make_qlinear_mul},
    KernelEntry{"com.microsoft", "QLinearSigmoid", make_qlinear_sigmoid},
    KernelEntry{"com.microsoft", "QLinearLeakyRelu", make_qlinear_leaky_relu},
    KernelEntry{"com.microsoft", "QLinearConcat", make_qlinear_concat},
    KernelEntry{"com.microsoft", "QLinearAveragePool", make_qlinear_averagepool},
    KernelEntry{"com.microsoft", "QLinearGlobalAveragePool", make_qlinear_global_averagepool},
    KernelEntry{"com.microsoft", "QLinearSoftmax", make_qlinear_softmax},
    // dynamic quantization (ops_dynamic.cpp)
    KernelEntry{"", "DynamicQuantizeLinear", make_dynamic_quantize_linear},
    KernelEntry{"", "MatMulInteger", make_matmul_integer},
    KernelEntry{"", "ConvInteger", make_conv_integer},
    KernelEntry{"com.microsoft", "MatMulNBits", make_matmul_nbits},
    KernelEntry{"com.microsoft", "DynamicQuantizeLSTM", make_dynamic_quantize_lstm},
};

}  // namespace

KernelFactory find_kernel_factory(const std::string& domain, const std::string& op_type) {
  std::string_view d = domain == "ai.onnx" ? std::string_view() : std::string_view(domain);
  for (const auto& e : kKernels)
    if (e.domain == d && e.op_type == op_type) return e.factory;
  return nullptr;
}

Status require_inputs(const ir::Node& node, std::span<const Tensor* const> inputs, size_t min_count) {
  for (size_t i = 0; i < min_count; ++i) {
    if (i >= inputs.size() || inputs[i] == nullptr)
      return Status::bad_input(node.op_type + " needs input " + std::to_string(i) + ", which is missing");
  }
  return Status::ok();
}

Status require_dtype(const ir::Node& node, const Tensor& t, DType want, const char* what) {
  if (t.dtype() != want) {
    return Status::bad_input(node.op_type + " " + what + " must be " + std::string(dtype_name(want)) + ", got " +
                             std::string(dtype_name(t.dtype())));
  }
  return Status::ok();
}

Status check_spatial_attribute(const ir::Node& node, const char* what, const Dims& values) {
  for (int64_t v : values)
    if (v > kMaxSpatialAttribute || v < -kMaxSpatialAttribute)
      return Status::bad_input(node.op_type + " " + what + " value " + std::to_string(v) + " is absurdly large");
  return Status::ok();
}

Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return Status::bad_input(node.op_type + " axis " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace quant::interp
