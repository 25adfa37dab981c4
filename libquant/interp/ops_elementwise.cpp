// Add, Sub, Mul, Div (multidirectional broadcasting, opset 7+), Relu, Clip, Sigmoid.
#include <limits>

#include "libquant/interp/ops.h"
#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/shape_util.h"

namespace quant::interp {
namespace {

template <class T>
void run_binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  kernels::binary_broadcast<T>(op, a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>(), y.shape());
}

KernelResult make_binary(const KernelContext& ctx, kernels::BinaryOp op) {
  const ir::Node& node = ctx.node;
  if (ctx.opset < 7 && node.find_attribute("broadcast")) {
    return Status::bad_input("legacy broadcast attribute (opset < 7) is not supported");
  }
  return make_kernel([&node, op](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (a.dtype() != b.dtype()) {
      return Status::bad_input("inputs have different types (" + std::string(dtype_name(a.dtype())) + " and " +
                               std::string(dtype_name(b.dtype())) + ")");
    }
    auto shape = kernels::broadcast_shapes(a.shape(), b.shape());
    if (!shape) {
      return Status::bad_input("shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) +
                               " do not broadcast");
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(a.dtype(), *shape));
    switch (a.dtype()) {
      case DType::Float32: run_binary<float>(op, a, b, out[0]); break;
      case DType::Float64: run_binary<double>(op, a, b, out[0]); break;
      case DType::Int32: run_binary<int32_t>(op, a, b, out[0]); break;
      case DType::Int64: run_binary<int64_t>(op, a, b, out[0]); break;
      default:
        return Status::bad_input("type " + std::string(dtype_name(a.dtype())) + " is not supported");
    }
    return Status::ok();
  });
}

// Float-only unary ops share this wrapper.
template <class F>
KernelResult make_unary_f32(const KernelContext& ctx, F fn) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node, fn](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, in[0]->shape()));
    fn(in[0]->data<float>(), out[0].data<float>(), in[0]->size());
    return Status::ok();
  });
}

}  // namespace

KernelResult make_add(const KernelContext& c) { return make_binary(c, kernels::BinaryOp::Add); }
KernelResult make_sub(const KernelContext& c) { return make_binary(c, kernels::BinaryOp::Sub); }
KernelResult make_mul(const KernelContext& c) { return make_binary(c, kernels::BinaryOp::Mul); }
KernelResult make_div(const KernelContext& c) { return make_binary(c, kernels::BinaryOp::Div); }

KernelResult make_relu(const KernelContext& c) { return make_unary_f32(c, kernels::relu_f32); }
KernelResult make_sigmoid(const KernelContext& c) { return make_unary_f32(c, kernels::sigmoid_f32); }

// Clip: bounds are attributes before opset 11 and optional inputs from 11 on.
KernelResult make_clip(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool bounds_are_inputs = ctx.opset >= 11;
  const float attr_lo = node.attr_float("min", std::numeric_limits<float>::lowest());
  const float attr_hi = node.attr_float("max", std::numeric_limits<float>::max());
  return make_kernel([&node, bounds_are_inputs, attr_lo, attr_hi](std::span<const Tensor* const> in,
                                                                 std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    float lo = attr_lo, hi = attr_hi;
    if (bounds_are_inputs) {
      lo = std::numeric_limits<float>::lowest();
      hi = std::numeric_limits<float>::max();
      for (size_t k = 1; k <= 2; ++k) {
        if (k >= in.size() || !in[k]) continue;
        if (in[k]->size() != 1) return Status::bad_input("Clip bound must be a scalar");
        QT_RETURN_IF_ERROR(require_dtype(node, *in[k], DType::Float32, k == 1 ? "min" : "max"));
        (k == 1 ? lo : hi) = in[k]->data<float>()[0];
      }
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, in[0]->shape()));
    kernels::clip_f32(in[0]->data<float>(), out[0].data<float>(), in[0]->size(), lo, hi);
    return Status::ok();
  });
}

}  // namespace quant::interp
