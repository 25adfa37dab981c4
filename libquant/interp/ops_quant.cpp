// QuantizeLinear / DequantizeLinear (opset 10 per-tensor, 13 per-axis, 21 blocked).
// In this interpreter they run exactly as specified; lowering DQ -> op -> Q
// chains to integer kernels is a separate pass.
#include <algorithm>
#include <cmath>

#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/quantize.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

struct QLayout {
  int64_t outer = 1, axis_len = 1, inner = 1, scale_count = 1;
};

// Checks the scale / zero point shapes against x and the axis attribute.
Expected<QLayout> quant_layout(const ir::Node& node, const Tensor& x, const Tensor& scale, const Tensor* zp,
                               int64_t axis_attr, int64_t block_size) {
  QT_RETURN_IF_ERROR(require_dtype(node, scale, DType::Float32, "scale"));
  QLayout l;
  l.scale_count = scale.size();
  if (zp && zp->shape() != scale.shape())
    return Status::bad_input("zero point shape " + dims_to_string(zp->shape()) + " differs from scale shape " +
                             dims_to_string(scale.shape()));
  for (float s : scale.values<float>())
    if (!(s > 0) || !std::isfinite(s)) return Status::bad_input("scale must be positive and finite, got " + std::to_string(s));
  if (block_size == 0 && scale.size() == 1 && scale.rank() <= 1) {
    l.axis_len = x.size();
    return l;
  }
  if (x.rank() == 0) return Status::bad_input("per-axis or blocked scale " + dims_to_string(scale.shape()) + " for a scalar input");
  QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? l.outer : d > axis ? l.inner : l.axis_len) *= x.dim(d);
  if (block_size == 0) {
    if (scale.rank() != 1 || scale.size() != x.dim(axis))
      return Status::bad_input("per-axis scale " + dims_to_string(scale.shape()) + " must have " +
                               std::to_string(x.dim(axis)) + " values (axis " + std::to_string(axis) + " of " +
                               dims_to_string(x.shape()) + ")");
    return l;
  }
  if (block_size < 0) return Status::bad_input("block_size must be >= 0");
  Dims want = x.shape();
  want[static_cast<size_t>(axis)] = (x.dim(axis) + block_size - 1) / block_size;
  if (scale.shape() != want)
    return Status::bad_input("blocked scale " + dims_to_string(scale.shape()) + " must have shape " + dims_to_string(want));
  return l;
}

template <class Q>
void quantize_as(const Tensor& x, const Tensor& scale, const Tensor* zp, const QLayout& l, int64_t block, Tensor& y,
                 int threads) {
  const float* xd = x.data<float>();
  Q* yd = y.data<Q>();
  const Q* zd = zp ? zp->data<Q>() : nullptr;
  if (block == 0 && l.scale_count == 1) {
    // Per tensor (a model's input): pieces on the threads. Every element is
    // quantized on its own, the vector path with the scalar path's bits.
    kernels::in_pieces(x.size(), threads, [&](int64_t first, int64_t count) {
      kernels::quantize_linear<Q>(xd + first, yd + first, 1, count, 1, scale.data<float>(), zd, 0, 1);
    });
    return;
  }
  kernels::quantize_linear<Q>(xd, yd, l.outer, l.axis_len, l.inner, scale.data<float>(), zd, block, l.scale_count);
}

template <class Q>
void dequantize_as(const Tensor& x, const Tensor& scale, const Tensor* zp, const QLayout& l, int64_t block, Tensor& y) {
  kernels::dequantize_linear<Q>(x.data<Q>(), y.data<float>(), l.outer, l.axis_len, l.inner, scale.data<float>(),
                                zp ? zp->data<Q>() : nullptr, block, l.scale_count);
}

}  // namespace

KernelResult make_quantize_linear(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t block = node.attr_int("block_size", 0);
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  const int threads = ctx.options.threads;
  return make_kernel([&node, axis, block, output_dtype, threads](std::span<const Tensor* const> in,
                                                                 std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(QLayout l, quant_layout(node, x, *in[1], zp, axis, block));
    // Output type: the zero point's, else output_dtype (opset 21), else uint8.
    DType qtype = zp ? zp->dtype() : output_dtype ? static_cast<DType>(output_dtype) : DType::UInt8;
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], qtype, x.shape()));
    switch (qtype) {
      case DType::UInt8: quantize_as<uint8_t>(x, *in[1], zp, l, block, out[0], threads); break;
      case DType::Int8: quantize_as<int8_t>(x, *in[1], zp, l, block, out[0], threads); break;
      case DType::UInt16: quantize_as<uint16_t>(x, *in[1], zp, l, block, out[0], threads); break;
      case DType::Int16: quantize_as<int16_t>(x, *in[1], zp, l, block, out[0], threads); break;
      default: return Status::bad_input("QuantizeLinear to " + std::string(dtype_name(qtype)) + " is not supported");
    }
    return Status::ok();
  });
}

KernelResult make_dequantize_linear(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t block = node.attr_int("block_size", 0);
  return make_kernel([&node, axis, block](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
    if (zp && zp->dtype() != x.dtype()) return Status::bad_input("zero point type differs from the input type");
    QT_ASSIGN_OR_RETURN(QLayout l, quant_layout(node, x, *in[1], zp, axis, block));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, x.shape()));
    switch (x.dtype()) {
      case DType::UInt8: dequantize_as<uint8_t>(x, *in[1], zp, l, block, out[0]); break;
      case DType::Int8: dequantize_as<int8_t>(x, *in[1], zp, l, block, out[0]); break;
      case DType::UInt16: dequantize_as<uint16_t>(x, *in[1], zp, l, block, out[0]); break;
      case DType::Int16: dequantize_as<int16_t>(x, *in[1], zp, l, block, out[0]); break;
      case DType::Int32: dequantize_as<int32_t>(x, *in[1], zp, l, block, out[0]); break;
      default: return Status::bad_input("DequantizeLinear from " + std::string(dtype_name(x.dtype())) + " is not supported");
    }
    return Status::ok();
  });
}

}  // namespace quant::interp
