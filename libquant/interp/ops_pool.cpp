// MaxPool (opset 8-12), AveragePool (opset 7-19), GlobalAveragePool.
#include "libquant/interp/ops.h"
#include "libquant/kernels/pool.h"

namespace quant::interp {
namespace {

struct PoolAttrs {
  kernels::AutoPad auto_pad;
  bool ceil_mode;
  Dims kernel_shape, pads, strides, dilations;
};

Expected<PoolAttrs> parse_pool_attrs(const ir::Node& node) {
  QT_ASSIGN_OR_RETURN(auto auto_pad, parse_auto_pad(node));
  PoolAttrs a{auto_pad, node.attr_int("ceil_mode", 0) != 0, node.attr_ints("kernel_shape"), node.attr_ints("pads"),
              node.attr_ints("strides"), node.attr_ints("dilations")};
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "kernel_shape", a.kernel_shape));
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "pads", a.pads));
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "strides", a.strides));
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "dilations", a.dilations));
  if (a.kernel_shape.empty() || a.kernel_shape.size() > 3)
    return Status::bad_input(node.op_type + " needs kernel_shape with 1 to 3 entries");
  const size_t sp = a.kernel_shape.size();
  if (!a.strides.empty() && a.strides.size() != sp) return Status::bad_input("strides rank differs from kernel_shape");
  if (!a.dilations.empty() && a.dilations.size() != sp) return Status::bad_input("dilations rank differs from kernel_shape");
  if (!a.pads.empty() && a.pads.size() != 2 * sp) return Status::bad_input("pads must have 2 entries per spatial dim");
  for (int64_t k : a.kernel_shape) if (k < 1) return Status::bad_input("kernel_shape entries must be >= 1");
  for (int64_t s : a.strides) if (s < 1) return Status::bad_input("strides must be >= 1");
  for (int64_t d : a.dilations) if (d < 1) return Status::bad_input("dilations must be >= 1");
  for (int64_t p : a.pads) if (p < 0) return Status::bad_input("pads must be >= 0");
  return a;
}

Expected<kernels::PoolGeometry> pool_geometry(const ir::Node& node, const PoolAttrs& a, const Tensor& x) {
  const size_t sp = a.kernel_shape.size();
  if (x.rank() != static_cast<int64_t>(sp) + 2)
    return Status::bad_input(node.op_type + " input " + dims_to_string(x.shape()) + " does not match kernel_shape rank");
  kernels::PoolGeometry g;
  g.batch = x.dim(0);
  g.channels = x.dim(1);
  g.in_spatial.assign(x.shape().begin() + 2, x.shape().end());
  g.kernel = a.kernel_shape;
  g.strides = a.strides.empty() ? Dims(sp, 1) : a.strides;
  g.dilations = a.dilations.empty() ? Dims(sp, 1) : a.dilations;
  g.pads_begin = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin(), a.pads.begin() + static_cast<long>(sp));
  g.pads_end = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin() + static_cast<long>(sp), a.pads.end());
  for (size_t i = 0; i < sp; ++i)
    if (g.pads_begin[i] >= g.kernel[i] || g.pads_end[i] >= g.kernel[i])
      return Status::bad_input(node.op_type + " pads must be smaller than the kernel");
  kernels::pool_output_shape(a.auto_pad, a.ceil_mode, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin,
                             g.pads_end, g.out_spatial);
  for (int64_t o : g.out_spatial)
    if (o < 1) return Status::bad_input(node.op_type + " window does not fit input " + dims_to_string(x.shape()));
  return g;
}

Dims pool_output_dims(const kernels::PoolGeometry& g) {
  Dims shape{g.batch, g.channels};
  shape.insert(shape.end(), g.out_spatial.begin(), g.out_spatial.end());
  return shape;
}

}  // namespace

KernelResult make_maxpool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  if (node.attr_int("storage_order", 0) != 0) return Status::bad_input("MaxPool storage_order=1 is not supported");
  if (node.outputs.size() > 1 && node.outputs[1]) return Status::bad_input("MaxPool Indices output is not supported");
  return make_kernel([&node, attrs](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, *in[0]));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, pool_output_dims(g)));
    kernels::max_pool_f32(g, in[0]->data<float>(), out[0].data<float>());
    return Status::ok();
  });
}

KernelResult make_averagepool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  const bool count_include_pad = node.attr_int("count_include_pad", 0) != 0;
  return make_kernel([&node, attrs, count_include_pad](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, *in[0]));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, pool_output_dims(g)));
    kernels::average_pool_f32(g, count_include_pad, in[0]->data<float>(), out[0].data<float>());
    return Status::ok();
  });
}

KernelResult make_global_averagepool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    if (x.rank() < 3) return Status::bad_input("GlobalAveragePool input must have rank >= 3");
    Dims shape(static_cast<size_t>(x.rank()), 1);
    shape[0] = x.dim(0);
    shape[1] = x.dim(1);
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    if (spatial == 0) return Status::bad_input("GlobalAveragePool over an empty spatial extent");
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    kernels::global_average_pool_f32(x.data<float>(), x.dim(0), x.dim(1), spatial, out[0].data<float>());
    return Status::ok();
  });
}

}  // namespace quant::interp
