// ONNX Runtime's com.microsoft QLinearAveragePool and QLinearGlobalAveragePool
// (opset 1), NCHW (channels_last = 0) only.
#include <string>
#include <vector>

#include "libquant/interp/ops_qlinear.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/qpool.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

enum : size_t { kX, kXScale, kXZero, kYScale, kYZero };

struct PoolParams {
  DType type = DType::UInt8;
  kernels::QLinearPoolParams p;
};

// X, x_scale, x_zero_point (optional), y_scale, y_zero_point (optional), all
// per tensor.
Expected<PoolParams> pool_params(std::span<const Tensor* const> in) {
  PoolParams q;
  if (optional_input(in, kXZero)) q.type = in[kXZero]->dtype();
  else if (optional_input(in, kYZero)) q.type = in[kYZero]->dtype();
  if (!is_8bit(q.type)) return Status::bad_input("zero points must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(q.p.x_scale, scalar_scale(in[kXScale], "x_scale"));
  QT_ASSIGN_OR_RETURN(q.p.y_scale, scalar_scale(optional_input(in, kYScale), "y_scale"));
  QT_ASSIGN_OR_RETURN(q.p.x_zero_point, scalar_zero_point(optional_input(in, kXZero), q.type, "x_zero_point"));
  QT_ASSIGN_OR_RETURN(q.p.y_zero_point, scalar_zero_point(optional_input(in, kYZero), q.type, "y_zero_point"));
  return q;
}

Status refuse_channels_last(const ir::Node& node) {
  if (node.attr_int("channels_last", 0) != 0)
    return Status::bad_input(node.describe() + ": channels_last = 1 (NHWC) is not supported");
  return Status::ok();
}

}  // namespace

// QLinearGlobalAveragePool: y[N, C, 1...] from x[N, C, spatial...] in integer
// (kernels::qlinear_global_average_pool), M = x_scale / (y_scale *
// float(spatial size)) as MLAS computes it.
KernelResult make_qlinear_global_averagepool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_RETURN_IF_ERROR(refuse_channels_last(node));
  const kernels::RequantMode mode = requant_mode(ctx);
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<PoolParams>(node, {kXScale, kXZero, kYScale, kYZero}, pool_params)));
  const int threads = ctx.options.threads;
  return make_kernel([&node, mode, params, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kX, kXScale, kYScale}));
    std::optional<PoolParams> scratch;
    QT_ASSIGN_OR_RETURN(const PoolParams* p, params.get(in, scratch));
    const Tensor& x = *in[kX];
    if (x.dtype() != p->type) return Status::bad_input("X must be " + std::string(dtype_name(p->type)));
    if (x.rank() < 3) return Status::bad_input("QLinearGlobalAveragePool input must have rank >= 3");
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    if (spatial == 0) return Status::bad_input("QLinearGlobalAveragePool over an empty spatial extent");
    Dims shape(static_cast<size_t>(x.rank()), 1);
    shape[0] = x.dim(0), shape[1] = x.dim(1);
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->type, shape));
    const float m = p->p.x_scale / (p->p.y_scale * static_cast<float>(spatial));
    if (!std::isfinite(m)) return Status::bad_input("x_scale / y_scale overflows float32");
    const kernels::Requantizer r = kernels::make_requantizer(mode, std::span<const float>(&m, 1), p->p.y_zero_point);
    return dispatch_8bit(p->type, "X", [&](auto tag) {
      using T = decltype(tag);
      kernels::qlinear_global_average_pool<T>(x.data<T>(), x.dim(0) * x.dim(1), spatial, static_cast<T>(p->p.x_zero_point),
                                              r, out[0].data<T>(), x.size() >= kernels::kElementPiece ? threads : 1);
      return Status::ok();
    });
  });
}

// QLinearAveragePool: the AveragePool attributes (auto_pad, ceil_mode,
// count_include_pad, kernel_shape, pads, strides); see kernels/qpool.h for
// the numerics of each requantization mode.
KernelResult make_qlinear_averagepool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_RETURN_IF_ERROR(refuse_channels_last(node));
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  if (!attrs.dilations.empty()) return Status::bad_input(node.describe() + ": QLinearAveragePool has no dilations");
  const bool count_include_pad = node.attr_int("count_include_pad", 0) != 0;
  const kernels::RequantMode mode = requant_mode(ctx);
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<PoolParams>(node, {kXScale, kXZero, kYScale, kYZero}, pool_params)));
  return make_kernel([&node, attrs, count_include_pad, mode, params](std::span<const Tensor* const> in,
                                                                       std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kX, kXScale, kYScale}));
    std::optional<PoolParams> scratch;
    QT_ASSIGN_OR_RETURN(const PoolParams* p, params.get(in, scratch));
    const Tensor& x = *in[kX];
    if (x.dtype() != p->type) return Status::bad_input("X must be " + std::string(dtype_name(p->type)));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, x));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->type, pool_output_dims(g)));
    return dispatch_8bit(p->type, "X", [&](auto tag) {
      using T = decltype(tag);
      kernels::qlinear_average_pool<T>(g, count_include_pad, p->p, mode, x.data<T>(), out[0].data<T>());
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
