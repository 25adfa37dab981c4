// ONNX Runtime's com.microsoft QLinearSoftmax (opset 1): inputs X, X_scale,
// x_zero_point (optional, not read: softmax ignores shifts), y_scale,
// y_zero_point (optional); attributes axis and opset (the ONNX Softmax opset
// it stands for: below 13 the rows are everything from `axis` on, from 13 the
// single axis). Arithmetic in kernels/qsoftmax.h.
#include <array>
#include <type_traits>
#include <string>
#include <vector>

#include "libquant/interp/ops_qlinear.h"
#include "libquant/kernels/qsoftmax.h"
#include "libquant/kernels/shape_util.h"

namespace quant::interp {
namespace {

enum : size_t { kX, kXScale, kXZero, kYScale, kYZero };

struct SoftmaxParams {
  DType type = DType::UInt8;
  float x_scale = 1, y_scale = 1;
  int32_t y_zero_point = 0;
};

Expected<SoftmaxParams> softmax_params(std::span<const Tensor* const> in) {
  SoftmaxParams q;
  if (optional_input(in, kXZero)) q.type = in[kXZero]->dtype();
  else if (optional_input(in, kYZero)) q.type = in[kYZero]->dtype();
  if (!is_8bit(q.type)) return Status::bad_input("zero points must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(q.x_scale, scalar_scale(in[kXScale], "X_scale"));
  QT_ASSIGN_OR_RETURN(q.y_scale, scalar_scale(optional_input(in, kYScale), "y_scale"));
  QT_RETURN_IF_ERROR(scalar_zero_point(optional_input(in, kXZero), q.type, "x_zero_point").status());
  QT_ASSIGN_OR_RETURN(q.y_zero_point, scalar_zero_point(optional_input(in, kYZero), q.type, "y_zero_point"));
  return q;
}

}  // namespace

KernelResult make_qlinear_softmax(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t opset = node.attr_int("opset", 13);
  const int64_t axis_attr = node.attr_int("axis", opset < 13 ? 1 : -1);
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<SoftmaxParams>(node, {kXScale, kXZero, kYScale, kYZero}, softmax_params)));
  return make_kernel([&node, opset, axis_attr, params](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kX, kXScale, kYScale}));
    std::optional<SoftmaxParams> scratch;
    QT_ASSIGN_OR_RETURN(const SoftmaxParams* p, params.get(in, scratch));
    const Tensor& x = *in[kX];
    if (x.dtype() != p->type) return Status::bad_input("X must be " + std::string(dtype_name(p->type)));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(p->type, x.shape()));
    if (x.size() == 0) return Status::ok();
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    const auto dims = std::span(x.shape());
    const int64_t outer = kernels::element_count(dims.first(static_cast<size_t>(axis)));
    const int64_t reduce = opset < 13 ? kernels::element_count(dims.subspan(static_cast<size_t>(axis))) : x.dim(axis);
    const int64_t inner = x.size() / outer / reduce;
    return dispatch_8bit(p->type, "X", [&](auto tag) {
      using T = decltype(tag);
      std::array<float, 256> table{};
      kernels::qlinear_softmax_table(p->x_scale, reduce, std::is_same_v<T, int8_t>, table.data());
      kernels::qlinear_softmax<T>(x.data<T>(), out[0].data<T>(), outer, reduce, inner, table.data(), p->y_scale, p->y_zero_point);
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
