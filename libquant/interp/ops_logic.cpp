// Logic and selection with broadcasting: And, Or, Xor (opset 7), the
// comparisons Equal, Less, Greater (13) and LessOrEqual, GreaterOrEqual (16)
// with bool outputs, and Where (16) for any element type. Before opset 7 the
// binary ones follow the broadcast/axis attributes.
#include "libquant/interp/elementwise_util.h"
#include "libquant/kernels/elementwise.h"

namespace quant::interp {
namespace {

KernelResult make_logical(const KernelContext& ctx, kernels::BinaryOp op) {
  const ir::Node& node = ctx.node;
  const LegacyBroadcast legacy = parse_legacy_broadcast(ctx);
  return make_kernel([&node, op, legacy](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, a, DType::Bool, "input A"));
    QT_RETURN_IF_ERROR(require_dtype(node, b, DType::Bool, "input B"));
    QT_ASSIGN_OR_RETURN(Dims b_shape, legacy_b_shape(node, legacy, a.shape(), b.shape()));
    QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&a.shape(), &b_shape}));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Bool, std::move(shape)));
    kernels::binary_broadcast<uint8_t>(op, a.data<uint8_t>(), a.shape(), b.data<uint8_t>(), b_shape,
                                       out[0].data<uint8_t>(), out[0].shape());
    return Status::ok();
  });
}

KernelResult make_compare(const KernelContext& ctx, kernels::CompareOp op, TypeSet allowed) {
  const ir::Node& node = ctx.node;
  const LegacyBroadcast legacy = parse_legacy_broadcast(ctx);
  return make_kernel([&node, op, allowed, legacy](std::span<const Tensor* const> in,
                                                  std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    QT_RETURN_IF_ERROR(require_same_types(node, in.first(2)));
    QT_RETURN_IF_ERROR(require_type_in(node, in[0]->dtype(), allowed, "input"));
    QT_ASSIGN_OR_RETURN(Dims b_shape, legacy_b_shape(node, legacy, in[0]->shape(), in[1]->shape()));
    QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&in[0]->shape(), &b_shape}));
    // float16/bfloat16 compare exactly as float32 (widening is exact).
    const bool half = is_half_type(in[0]->dtype());
    const Tensor wa = half ? widen_to_float32(*in[0]) : Tensor();
    const Tensor wb = half ? widen_to_float32(*in[1]) : Tensor();
    const Tensor& a = half ? wa : *in[0];
    const Tensor& b = half ? wb : *in[1];
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Bool, std::move(shape)));
    uint8_t* y = out[0].data<uint8_t>();
    if (a.dtype() == DType::Bool) {
      kernels::compare_broadcast<uint8_t>(op, a.data<uint8_t>(), a.shape(), b.data<uint8_t>(), b_shape, y,
                                          out[0].shape());
      return Status::ok();
    }
    return dispatch_numeric(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::compare_broadcast<T>(op, a.data<T>(), a.shape(), b.data<T>(), b_shape, y, out[0].shape());
      return Status::ok();
    });
  });
}

}  // namespace

KernelResult make_and(const KernelContext& c) { return make_logical(c, kernels::BinaryOp::And); }
KernelResult make_or(const KernelContext& c) { return make_logical(c, kernels::BinaryOp::Or); }
KernelResult make_xor(const KernelContext& c) { return make_logical(c, kernels::BinaryOp::Xor); }

// Equal also takes bool (opset 11+); strings (opset 19) are not supported.
KernelResult make_equal(const KernelContext& c) {
  return make_compare(c, kernels::CompareOp::Equal, kNumericTypes | TypeSet{DType::Bool});
}
KernelResult make_less(const KernelContext& c) { return make_compare(c, kernels::CompareOp::Less, kNumericTypes); }
KernelResult make_greater(const KernelContext& c) {
  return make_compare(c, kernels::CompareOp::Greater, kNumericTypes);
}
KernelResult make_less_or_equal(const KernelContext& c) {
  return make_compare(c, kernels::CompareOp::LessOrEqual, kNumericTypes);
}
KernelResult make_greater_or_equal(const KernelContext& c) {
  return make_compare(c, kernels::CompareOp::GreaterOrEqual, kNumericTypes);
}

// Where (opset 9/16): condition bool, X and Y of one element type (any: the
// values are only copied), all three broadcast together.
KernelResult make_where(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& cond = *in[0];
    const Tensor& x = *in[1];
    const Tensor& y = *in[2];
    QT_RETURN_IF_ERROR(require_dtype(node, cond, DType::Bool, "condition"));
    QT_RETURN_IF_ERROR(require_same_types(node, in.subspan(1, 2)));
    const size_t elem = dtype_size(x.dtype());
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8)
      return Status::bad_input("Where does not support element type " + std::string(dtype_name(x.dtype())));
    QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&cond.shape(), &x.shape(), &y.shape()}));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), std::move(shape)));
    kernels::where_broadcast(cond.data<uint8_t>(), cond.shape(), x.raw(), x.shape(), y.raw(), y.shape(), out[0].raw(),
                             out[0].shape(), elem);
    return Status::ok();
  });
}

}  // namespace quant::interp
