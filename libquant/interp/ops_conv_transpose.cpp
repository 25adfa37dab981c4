// ConvTranspose (opset 1-11; attributes unchanged since 1 apart from
// output_shape/auto_pad details of opset 11).
#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/conv_transpose.h"

namespace quant::interp {
namespace {

struct ConvTransposeAttrs {
  kernels::AutoPad auto_pad;
  Dims dilations, kernel_shape, output_padding, output_shape, pads, strides;
  int64_t group;
};

Expected<kernels::ConvTransposeGeometry> geometry(const ConvTransposeAttrs& a, const Tensor& x, const Tensor& w) {
  const int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return Status::bad_input("ConvTranspose input must have rank 3 to 5, got " + dims_to_string(x.shape()));
  const size_t sp = static_cast<size_t>(rank - 2);
  if (w.rank() != rank)
    return Status::bad_input("ConvTranspose weight " + dims_to_string(w.shape()) + " does not match input " +
                             dims_to_string(x.shape()));
  kernels::ConvTransposeGeometry g;
  g.batch = x.dim(0);
  g.in_channels = x.dim(1);
  g.group = a.group;
  if (g.group < 1 || w.dim(0) != g.in_channels || g.in_channels % g.group != 0 || w.dim(1) > kMaxComputedElements / g.group)
    return Status::bad_input("ConvTranspose channels do not fit: input " + dims_to_string(x.shape()) + ", weight " +
                             dims_to_string(w.shape()) + ", group " + std::to_string(g.group));
  g.out_channels = w.dim(1) * g.group;
  g.in_spatial.assign(x.shape().begin() + 2, x.shape().end());
  g.kernel.assign(w.shape().begin() + 2, w.shape().end());
  if (!a.kernel_shape.empty() && a.kernel_shape != g.kernel)
    return Status::bad_input("ConvTranspose kernel_shape attribute disagrees with the weight shape");
  g.strides = a.strides.empty() ? Dims(sp, 1) : a.strides;
  g.dilations = a.dilations.empty() ? Dims(sp, 1) : a.dilations;
  const Dims output_padding = a.output_padding.empty() ? Dims(sp, 0) : a.output_padding;
  if (g.strides.size() != sp || g.dilations.size() != sp || output_padding.size() != sp)
    return Status::bad_input("ConvTranspose strides/dilations/output_padding rank mismatch");
  if (!a.pads.empty() && a.pads.size() != 2 * sp)
    return Status::bad_input("ConvTranspose pads must have 2 entries per spatial dim");
  // output_shape lists the spatial dims; a full [N, C, ...] shape is accepted too (ONNX Runtime).
  Dims output_shape = a.output_shape;
  if (output_shape.size() == sp + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != sp)
    return Status::bad_input("ConvTranspose output_shape must have one entry per spatial dim");
  for (size_t i = 0; i < sp; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1) return Status::bad_input("ConvTranspose strides and dilations must be >= 1");
    if (output_padding[i] < 0) return Status::bad_input("ConvTranspose output_padding must be >= 0");
    if (g.strides[i] > kMaxComputedElements || g.dilations[i] > kMaxComputedElements || output_padding[i] > kMaxComputedElements)
      return Status::bad_input("ConvTranspose strides, dilations or output_padding are too large");
  }
  g.pads_begin = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin(), a.pads.begin() + static_cast<long>(sp));
  g.pads_end = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin() + static_cast<long>(sp), a.pads.end());
  for (size_t i = 0; i < sp; ++i)
    if (g.pads_begin[i] < 0 || g.pads_end[i] < 0) return Status::bad_input("ConvTranspose pads must be >= 0");
  kernels::resolve_conv_transpose_pads(a.auto_pad, g.in_spatial, g.kernel, g.strides, g.dilations, output_padding,
                                       output_shape, g.pads_begin, g.pads_end, g.out_spatial);
  for (int64_t o : g.out_spatial)
    if (o < 1) return Status::bad_input("ConvTranspose output would be empty for input " + dims_to_string(x.shape()));
  return g;
}

}  // namespace

KernelResult make_conv_transpose(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(auto auto_pad, parse_auto_pad(node));
  ConvTransposeAttrs attrs{auto_pad,
                           node.attr_ints("dilations"),
                           node.attr_ints("kernel_shape"),
                           node.attr_ints("output_padding"),
                           node.attr_ints("output_shape"),
                           node.attr_ints("pads"),
                           node.attr_ints("strides"),
                           node.attr_int("group", 1)};
  return make_kernel([&node, attrs](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& w = *in[1];
    const Tensor* b = in.size() > 2 ? in[2] : nullptr;
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    QT_RETURN_IF_ERROR(require_dtype(node, w, DType::Float32, "weight"));
    QT_ASSIGN_OR_RETURN(auto g, geometry(attrs, x, w));
    if (b) {
      QT_RETURN_IF_ERROR(require_dtype(node, *b, DType::Float32, "bias"));
      if (b->size() != g.out_channels)
        return Status::bad_input("ConvTranspose bias must have " + std::to_string(g.out_channels) + " values");
    }
    Dims shape{g.batch, g.out_channels};
    shape.insert(shape.end(), g.out_spatial.begin(), g.out_spatial.end());
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    kernels::conv_transpose_f32(g, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr,
                                out[0].data<float>());
    return Status::ok();
  });
}

}  // namespace quant::interp
