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
