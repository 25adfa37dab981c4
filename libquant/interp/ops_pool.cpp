// MaxPool (opset 8-12, with Indices), AveragePool (opset 7-19),
// GlobalAveragePool, GlobalMaxPool, LpPool (opset 2-18), GlobalLpPool,
// MaxUnpool (opset 9-11).
#include <algorithm>
#include <cstring>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/pool.h"
#include "libquant/kernels/pool_fast.h"
#include "libquant/kernels/qpool_max.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {

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

// MaxPool: float, double, int8 and uint8 (opset 12); the optional Indices
// output (opset 8) with storage_order 0 (row-major) or 1 (column-major).
KernelResult make_maxpool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  const int64_t storage_order = node.attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) return Status::bad_input("MaxPool storage_order must be 0 or 1");
  const int threads = ctx.options.threads;
  return make_kernel([&node, attrs, storage_order, threads](std::span<const Tensor* const> in,
                                                           std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    const DType t = x.dtype();
    if (t != DType::Float32 && t != DType::Float64 && t != DType::Int8 && t != DType::UInt8)
      return Status::bad_input("MaxPool input must be float32, float64, int8 or uint8, got " + std::string(dtype_name(t)));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, x));
    if (t == DType::Float32 && out.size() == 1) {
      QT_RETURN_IF_ERROR(reuse_or_create(out[0], t, pool_output_dims(g)));
      kernels::max_pool_f32_fast(g, x.data<float>(), out[0].data<float>(), threads);
      return Status::ok();
    }
    if ((t == DType::UInt8 || t == DType::Int8) && out.size() == 1) {  // lowered quantized graphs
      QT_RETURN_IF_ERROR(reuse_or_create(out[0], t, pool_output_dims(g)));
      if (t == DType::UInt8) kernels::max_pool_8bit_fast(g, x.data<uint8_t>(), out[0].data<uint8_t>(), threads);
      else kernels::max_pool_8bit_fast(g, x.data<int8_t>(), out[0].data<int8_t>(), threads);
      return Status::ok();
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(t, pool_output_dims(g)));
    int64_t* indices = nullptr;
    if (out.size() > 1) {
      QT_ASSIGN_OR_RETURN(out[1], Tensor::create(DType::Int64, pool_output_dims(g)));
      indices = out[1].data<int64_t>();
    }
    Tensor& y = out[0];
    return dispatch_numeric(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int8_t> ||
                    std::is_same_v<T, uint8_t>)
        kernels::max_pool<T>(g, x.data<T>(), y.data<T>(), indices, storage_order == 1);
      return Status::ok();
    });
  });
}

// LpPool (opset 2-18): p is an int attribute from opset 2 (default 2).
KernelResult make_lppool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  const int64_t p = node.attr_int("p", 2);
  if (p < 1) return Status::bad_input("LpPool p must be >= 1");
  return make_kernel([&node, attrs, p](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, *in[0]));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, pool_output_dims(g)));
    kernels::lp_pool_f32(g, static_cast<float>(p), in[0]->data<float>(), out[0].data<float>());
    return Status::ok();
  });
}

// MaxUnpool (opset 9-11): scatters X into zeros at the flat Indices of a
// MaxPool. The output is output_shape when given, else per spatial dim
// (in - 1) * stride + kernel - pad_begin - pad_end. As ONNX Runtime does
// (microsoft/onnxruntime#2193, after onnx/onnx#2398), indices address the
// output_shape tensor directly; output_shape adds no padding.
KernelResult make_maxunpool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Dims kernel_shape = node.attr_ints("kernel_shape");
  const size_t sp = kernel_shape.size();
  if (sp == 0) return Status::bad_input("MaxUnpool needs kernel_shape");
  const Dims pads = node.attr_ints("pads", Dims(2 * sp, 0)), strides = node.attr_ints("strides", Dims(sp, 1));
  if (pads.size() != 2 * sp || strides.size() != sp) return Status::bad_input("MaxUnpool pads/strides do not match kernel_shape");
  for (size_t i = 0; i < sp; ++i)
    if (kernel_shape[i] < 1 || strides[i] < 1 || pads[i] < 0 || pads[i + sp] < 0)
      return Status::bad_input("MaxUnpool kernel_shape and strides must be >= 1, pads >= 0");
  return make_kernel([&node, kernel_shape, pads, strides, sp](std::span<const Tensor* const> in,
                                                              std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    QT_RETURN_IF_ERROR(require_dtype(node, idx, DType::Int64, "indices"));
    if (x.rank() != static_cast<int64_t>(sp) + 2) return Status::bad_input("MaxUnpool input rank does not match kernel_shape");
    if (idx.shape() != x.shape()) return Status::bad_input("MaxUnpool indices must have the input's shape");
    // MaxUnpool (opset 11): the indices address the shape inferred from the
    // pooling attributes; an output_shape input only pads that result at the
    // end of each spatial axis (the ONNX reference op_max_unpool.py places the
    // inferred block at the origin of a zero output of output_shape).
    Dims inferred{x.dim(0), x.dim(1)};
    for (size_t i = 0; i < sp; ++i)
      inferred.push_back((x.shape()[i + 2] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + sp]);
    QT_RETURN_IF_ERROR(check_computed_shape(node, inferred));
    Dims shape = inferred;
    if (in.size() > 2 && in[2]) {
      QT_ASSIGN_OR_RETURN(shape, read_int_list(node, *in[2], "output_shape"));
      bool fits = shape.size() == inferred.size() && shape[0] == inferred[0] && shape[1] == inferred[1];
      for (size_t i = 2; fits && i < shape.size(); ++i) fits = shape[i] >= inferred[i];
      if (!fits)
        return Status::bad_input("MaxUnpool output_shape " + dims_to_string(shape) + " is smaller than the unpooled shape " +
                                 dims_to_string(inferred) + " of input " + dims_to_string(x.shape()));
      QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    }
    const int64_t count = element_count(inferred);
    for (int64_t i = 0; i < idx.size(); ++i)
      if (idx.data<int64_t>()[i] < 0 || idx.data<int64_t>()[i] >= count)
        return Status::bad_input("MaxUnpool index " + std::to_string(idx.data<int64_t>()[i]) + " is outside the output " +
                                 dims_to_string(inferred));
    QT_ASSIGN_OR_RETURN(Tensor unpooled, Tensor::create(DType::Float32, inferred));
    kernels::max_unpool_f32(x.data<float>(), idx.data<int64_t>(), x.size(), unpooled.data<float>(), count);
    if (shape == inferred) {
      out[0] = std::move(unpooled);
      return Status::ok();
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    // Copy row by row (the last axis) into the origin corner of the zeroed output.
    const int64_t row = inferred.back(), rows = count / std::max<int64_t>(row, 1);
    for (int64_t r = 0; r < rows && row > 0; ++r) {
      int64_t src = r, dst = 0, stride = 1;
      for (size_t d = inferred.size() - 1; d-- > 0;) {
        dst += (src % inferred[d]) * stride;
        src /= inferred[d];
        stride *= shape[d];
      }
      std::memcpy(out[0].data<float>() + dst * shape.back(), unpooled.data<float>() + r * row, static_cast<size_t>(row) * sizeof(float));
    }
    return Status::ok();
  });
}

KernelResult make_averagepool(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node));
  const bool count_include_pad = node.attr_int("count_include_pad", 0) != 0;
  const int threads = ctx.options.threads;
  return make_kernel([&node, attrs, count_include_pad, threads](std::span<const Tensor* const> in,
                                                               std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(auto g, pool_geometry(node, attrs, *in[0]));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, pool_output_dims(g)));
    kernels::average_pool_f32_fast(g, count_include_pad, in[0]->data<float>(), out[0].data<float>(), threads);
    return Status::ok();
  });
}

namespace {

enum class GlobalPool { Average, Max, Lp };

// GlobalAveragePool, GlobalMaxPool (opset 1), GlobalLpPool (opset 2): one
// value per (n, c) over all spatial dims, which are kept as 1s.
KernelResult make_global_pool(const KernelContext& ctx, GlobalPool kind) {
  const ir::Node& node = ctx.node;
  const int64_t p = node.attr_int("p", 2);
  if (kind == GlobalPool::Lp && p < 1) return Status::bad_input("GlobalLpPool p must be >= 1");
  const int threads = ctx.options.threads;
  return make_kernel([&node, kind, p, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    if (x.rank() < 3) return Status::bad_input(node.op_type + " input must have rank >= 3");
    Dims shape(static_cast<size_t>(x.rank()), 1);
    shape[0] = x.dim(0);
    shape[1] = x.dim(1);
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    if (spatial == 0) return Status::bad_input(node.op_type + " over an empty spatial extent");
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, shape));
    float* y = out[0].data<float>();
    switch (kind) {
      case GlobalPool::Average:
        kernels::global_average_pool_f32(x.data<float>(), x.dim(0), x.dim(1), spatial, y,
                                         x.size() >= kernels::kElementPiece ? threads : 1);
        break;
      case GlobalPool::Max: kernels::global_max_pool_f32(x.data<float>(), x.dim(0), x.dim(1), spatial, y); break;
      case GlobalPool::Lp:
        kernels::global_lp_pool_f32(x.data<float>(), x.dim(0), x.dim(1), spatial, static_cast<float>(p), y);
        break;
    }
    return Status::ok();
  });
}

}  // namespace

KernelResult make_global_averagepool(const KernelContext& ctx) { return make_global_pool(ctx, GlobalPool::Average); }
KernelResult make_global_maxpool(const KernelContext& ctx) { return make_global_pool(ctx, GlobalPool::Max); }
KernelResult make_global_lppool(const KernelContext& ctx) { return make_global_pool(ctx, GlobalPool::Lp); }

}  // namespace quant::interp
