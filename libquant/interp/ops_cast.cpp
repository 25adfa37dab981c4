// Cast (opset 6/9/13) and CastLike (15) between the numeric types, bool,
// float16 and bfloat16; the conversion rules are in kernels/cast.h. String
// tensors are not supported (the model loader refuses them), nor the float8
// types and the saturate attribute of opset 19.
#include "libquant/interp/elementwise_util.h"

namespace quant::interp {
namespace {

constexpr TypeSet kCastTypes = kNumericTypes | TypeSet{DType::Bool};

Status run_cast(const ir::Node& node, const Tensor& x, DType to, Tensor& y) {
  QT_RETURN_IF_ERROR(require_type_in(node, x.dtype(), kCastTypes, "input"));
  QT_RETURN_IF_ERROR(require_type_in(node, to, kCastTypes, "target"));
  if (x.dtype() == to) {
    y = x;
    return Status::ok();
  }
  QT_ASSIGN_OR_RETURN(y, Tensor::create(to, x.shape()));
  return dispatch_cast_type(x.dtype(), [&](auto src_tag) {
    using Src = decltype(src_tag);
    return dispatch_cast_type(to, [&](auto dst_tag) {
      using Dst = decltype(dst_tag);
      kernels::cast_array<Src, Dst>(static_cast<const kernels::storage_t<Src>*>(x.raw()),
                                    static_cast<kernels::storage_t<Dst>*>(y.raw()), x.size());
      return Status::ok();
    });
  });
}

}  // namespace

KernelResult make_cast(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (!node.find_attribute("to")) return Status::bad_input("Cast needs a 'to' attribute");
  const int64_t to_number = node.attr_int("to", 0);
  const auto to = dtype_from_onnx(static_cast<int>(to_number));
  if (to_number == 8) return Status::bad_input("Cast to string is not supported (string tensors are not)");
  if (!to) return Status::bad_input("Cast 'to' is " + std::to_string(to_number) + ", not an element type qtool knows");
  QT_RETURN_IF_ERROR(require_type_in(node, *to, kCastTypes, "target"));
  return make_kernel([&node, to = *to](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    return run_cast(node, *in[0], to, out[0]);
  });
}

// CastLike: the target type is input 1's (its values are not read).
KernelResult make_castlike(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    return run_cast(node, *in[0], in[1]->dtype(), out[0]);
  });
}

}  // namespace quant::interp
