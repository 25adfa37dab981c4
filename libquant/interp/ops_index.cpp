// Indexing ops: Gather, GatherElements, GatherND, ScatterElements (and its
// deprecated name Scatter), ScatterND, OneHot, NonZero, Compress, Unique.
// Every index is validated here before a kernel uses it.
#include <cstring>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/gather.h"

namespace quant::interp {
namespace {

// The storage type of any fixed-size element: arithmetic types as themselves,
// Bool as uint8_t, Float16/BFloat16 as uint16_t (copies only).
template <class F>
Status dispatch_storage(DType t, F&& f) {
  if (t == DType::Float16 || t == DType::BFloat16) return f(uint16_t{});
  return dispatch_numeric_or_bool(t, std::forward<F>(f));
}

bool arithmetic(DType t) { return t != DType::Bool && t != DType::Float16 && t != DType::BFloat16; }

Expected<kernels::ScatterReduction> parse_reduction(const ir::Node& node, int64_t opset) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return kernels::ScatterReduction::None;
  if (r == "add" && opset >= 16) return kernels::ScatterReduction::Add;
  if (r == "mul" && opset >= 16) return kernels::ScatterReduction::Mul;
  if (r == "max" && opset >= 18) return kernels::ScatterReduction::Max;
  if (r == "min" && opset >= 18) return kernels::ScatterReduction::Min;
  return Status::bad_input(node.op_type + " reduction '" + r + "' is not defined at opset " + std::to_string(opset));
}

// Off the axis, the index tensor (GatherElements, ScatterElements) may not
// be larger than the data.
Status check_elements_shapes(const ir::Node& node, const Tensor& data, const Tensor& indices, int64_t axis) {
  if (indices.rank() != data.rank())
    return Status::bad_input(node.op_type + " indices " + dims_to_string(indices.shape()) + " and data " +
                             dims_to_string(data.shape()) + " differ in rank");
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return Status::bad_input(node.op_type + " indices " + dims_to_string(indices.shape()) + " exceed data " +
                               dims_to_string(data.shape()) + " off the axis");
  return Status::ok();
}

// GatherND/ScatterND index tuples: the last indices dim k, every entry j in
// [-dim, dim) of data dim (first + j), made non-negative.
Expected<std::vector<int64_t>> read_index_tuples(const ir::Node& node, const Tensor& indices, const Dims& data_shape,
                                                 size_t first) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    return Status::bad_input(node.op_type + " indices must be int64 or int32");
  if (indices.rank() < 1) return Status::bad_input(node.op_type + " indices must have rank >= 1");
  const int64_t k = indices.dim(indices.rank() - 1);
  if (k < 1 || first + static_cast<size_t>(k) > data_shape.size())
    return Status::bad_input(node.op_type + " index tuples of length " + std::to_string(k) + " do not fit data " +
                             dims_to_string(data_shape));
  std::vector<int64_t> v(static_cast<size_t>(indices.size()));
  for (int64_t i = 0; i < indices.size(); ++i) {
    const int64_t dim = data_shape[first + static_cast<size_t>(i % k)];
    const int64_t x = indices.as_int64(i);
    if (x < -dim || x >= dim)
      return Status::bad_input(node.op_type + " index " + std::to_string(x) + " is out of range for a dim of " +
                               std::to_string(dim));
    v[static_cast<size_t>(i)] = x < 0 ? x + dim : x;
  }
  return v;
}

}  // namespace

// Gather (opset 1-13): indices of any shape replace the axis; negative
// indices count from the end (opset 11+).
KernelResult make_gather(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    if (x.rank() < 1) return Status::bad_input("Gather data must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    QT_ASSIGN_OR_RETURN(auto idx, read_indices(node, *in[1], x.dim(axis), "indices"));
    Dims shape(x.shape().begin(), x.shape().begin() + axis);
    shape.insert(shape.end(), in[1]->shape().begin(), in[1]->shape().end());
    shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != axis) (d < axis ? outer : inner) *= x.dim(d);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::gather(x.raw(), dtype_size(x.dtype()), outer, x.dim(axis), inner, idx.data(),
                    static_cast<int64_t>(idx.size()), out[0].raw());
    return Status::ok();
  });
}

// GatherElements (opset 11-13): output shaped like indices.
KernelResult make_gather_elements(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& indices = *in[1];
    if (x.rank() < 1) return Status::bad_input("GatherElements data must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    QT_RETURN_IF_ERROR(check_elements_shapes(node, x, indices, axis));
    QT_ASSIGN_OR_RETURN(auto idx, read_indices(node, indices, x.dim(axis), "indices"));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), indices.shape()));
    kernels::gather_elements(x.raw(), dtype_size(x.dtype()), x.shape(), idx.data(), indices.shape(), axis, out[0].raw());
    return Status::ok();
  });
}

// GatherND (opset 11-13, batch_dims from 12).
KernelResult make_gather_nd(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t batch_dims = node.attr_int("batch_dims", 0);
  if (batch_dims < 0) return Status::bad_input("GatherND batch_dims must be >= 0");
  return make_kernel([&node, batch_dims](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& indices = *in[1];
    const size_t b = static_cast<size_t>(batch_dims);
    if (b >= static_cast<size_t>(std::min(x.rank(), indices.rank())))
      return Status::bad_input("GatherND batch_dims must be smaller than both ranks");
    for (size_t d = 0; d < b; ++d)
      if (x.shape()[d] != indices.shape()[d])
        return Status::bad_input("GatherND batch dims of data " + dims_to_string(x.shape()) + " and indices " +
                                 dims_to_string(indices.shape()) + " differ");
    QT_ASSIGN_OR_RETURN(auto idx, read_index_tuples(node, indices, x.shape(), b));
    const size_t k = static_cast<size_t>(indices.dim(indices.rank() - 1));
    Dims shape(indices.shape().begin(), indices.shape().end() - 1);
    shape.insert(shape.end(), x.shape().begin() + static_cast<long>(b + k), x.shape().end());
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::gather_nd(x.raw(), dtype_size(x.dtype()), x.shape(), idx.data(), indices.shape(), batch_dims, out[0].raw());
    return Status::ok();
  });
}

// ScatterElements (opset 11-18; reduction from 16) and Scatter (opset 9-10,
// the same op without reduction).
KernelResult make_scatter_elements(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  QT_ASSIGN_OR_RETURN(auto reduction, parse_reduction(node, node.op_type == "Scatter" ? 0 : ctx.opset));
  return make_kernel([&node, axis_attr, reduction](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& data = *in[0];
    const Tensor& indices = *in[1];
    const Tensor& updates = *in[2];
    if (data.rank() < 1) return Status::bad_input(node.op_type + " data must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, data.rank()));
    QT_RETURN_IF_ERROR(check_elements_shapes(node, data, indices, axis));
    if (updates.shape() != indices.shape() || updates.dtype() != data.dtype())
      return Status::bad_input(node.op_type + " updates must match indices in shape and data in type");
    if (reduction != kernels::ScatterReduction::None && !arithmetic(data.dtype()))
      return Status::bad_input(node.op_type + " reduction needs a numeric type");
    QT_ASSIGN_OR_RETURN(auto idx, read_indices(node, indices, data.dim(axis), "indices"));
    out[0] = data;
    Tensor& y = out[0];
    return dispatch_storage(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::scatter_elements<T>(y.data<T>(), y.shape(), idx.data(), indices.shape(), updates.data<T>(), axis, reduction);
      return Status::ok();
    });
  });
}

// ScatterND (opset 11-18; reduction from 16).
KernelResult make_scatter_nd(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(auto reduction, parse_reduction(node, ctx.opset));
  return make_kernel([&node, reduction](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& data = *in[0];
    const Tensor& indices = *in[1];
    const Tensor& updates = *in[2];
    QT_ASSIGN_OR_RETURN(auto idx, read_index_tuples(node, indices, data.shape(), 0));
    const size_t k = static_cast<size_t>(indices.dim(indices.rank() - 1));
    Dims want(indices.shape().begin(), indices.shape().end() - 1);
    want.insert(want.end(), data.shape().begin() + static_cast<long>(k), data.shape().end());
    if (updates.shape() != want || updates.dtype() != data.dtype())
      return Status::bad_input("ScatterND updates must be " + dims_to_string(want) + " of the data type, got " +
                               dims_to_string(updates.shape()));
    if (reduction != kernels::ScatterReduction::None && !arithmetic(data.dtype()))
      return Status::bad_input("ScatterND reduction needs a numeric type");
    out[0] = data;
    Tensor& y = out[0];
    return dispatch_storage(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::scatter_nd<T>(y.data<T>(), y.shape(), idx.data(), indices.shape(), updates.data<T>(), reduction);
      return Status::ok();
    });
  });
}

// OneHot (opset 9-11): a new axis of length depth holding values[1] where it
// equals the index and values[0] elsewhere. Indices of any numeric type are
// truncated to integers; negative ones count from depth (opset 11); an index
// outside [-depth, depth) gives an all-off row (ONNX Runtime does the same).
KernelResult make_one_hot(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", -1);
  return make_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& indices = *in[0];
    const Tensor& values = *in[2];
    if (in[1]->size() != 1) return Status::bad_input("OneHot depth must be a single value");
    if (values.size() != 2) return Status::bad_input("OneHot values must hold [off, on]");
    if (!arithmetic(indices.dtype()) || !arithmetic(in[1]->dtype()))
      return Status::bad_input("OneHot indices and depth must be numeric");
    const double depth_value = in[1]->as_double(0);  // checked before the conversion to an integer
    if (!(depth_value >= 1 && depth_value <= static_cast<double>(kMaxComputedElements)))
      return Status::bad_input("OneHot depth " + std::to_string(depth_value) + " is out of range");
    const int64_t depth = static_cast<int64_t>(depth_value);
    const int64_t rank = indices.rank() + 1;
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, rank));
    Dims shape = indices.shape();
    shape.insert(shape.begin() + axis, depth);
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < indices.rank(); ++d) (d < axis ? outer : inner) *= indices.dim(d);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(values.dtype(), shape));
    const size_t elem = dtype_size(values.dtype());
    const auto* off = static_cast<const unsigned char*>(values.raw());
    auto* y = static_cast<unsigned char*>(out[0].raw());
    for (int64_t i = 0; i < out[0].size(); ++i) std::memcpy(y + static_cast<size_t>(i) * elem, off, elem);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const double v = indices.as_double(o * inner + i);
        if (!(v > static_cast<double>(-depth - 1) && v < static_cast<double>(depth))) continue;  // NaN too
        int64_t k = static_cast<int64_t>(v);
        if (k < 0) k += depth;
        if (k < 0 || k >= depth) continue;
        std::memcpy(y + static_cast<size_t>((o * depth + k) * inner + i) * elem, off + elem, elem);
      }
    }
    return Status::ok();
  });
}

// NonZero (opset 9-13): int64 [rank, count] coordinates of the non-zero
// elements in row-major order. A scalar counts as rank 1 (ONNX Runtime).
KernelResult make_non_zero(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    std::vector<int64_t> hits;
    QT_RETURN_IF_ERROR(dispatch_numeric_or_bool(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.size(); ++i)
        if (p[i] != T(0)) hits.push_back(i);
      return Status::ok();
    }));
    const int64_t rank = std::max<int64_t>(x.rank(), 1), n = static_cast<int64_t>(hits.size());
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Int64, {rank, n}));
    int64_t* y = out[0].data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t flat = hits[static_cast<size_t>(j)];
      for (int64_t d = x.rank() - 1; d >= 0; --d) {
        y[d * n + j] = flat % x.dim(d);
        flat /= x.dim(d);
      }
      if (x.rank() == 0) y[j] = 0;
    }
    return Status::ok();
  });
}

// Compress (opset 9-11): keeps the slices along axis whose condition is true
// (a shorter condition leaves the rest out); without axis, over the flattened input.
KernelResult make_compress(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool has_axis = node.find_attribute("axis") != nullptr;
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([&node, has_axis, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& cond = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, cond, DType::Bool, "condition"));
    if (cond.rank() != 1) return Status::bad_input("Compress condition must be 1-D");
    int64_t axis = 0, outer = 1, dim = x.size(), inner = 1;
    if (has_axis) {
      QT_ASSIGN_OR_RETURN(axis, normalize_axis(node, axis_attr, x.rank()));
      if (x.rank() == 0) return Status::bad_input("Compress with an axis needs rank >= 1");
      dim = x.dim(axis);
      for (int64_t d = 0; d < x.rank(); ++d)
        if (d != axis) (d < axis ? outer : inner) *= x.dim(d);
    }
    if (cond.size() > dim)
      return Status::bad_input("Compress condition has " + std::to_string(cond.size()) + " entries for " + std::to_string(dim));
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.size(); ++i)
      if (cond.data<uint8_t>()[i]) keep.push_back(i);
    Dims shape{static_cast<int64_t>(keep.size())};
    if (has_axis) {
      shape = x.shape();
      shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::gather(x.raw(), dtype_size(x.dtype()), outer, dim, inner, keep.data(), static_cast<int64_t>(keep.size()),
                    out[0].raw());
    return Status::ok();
  });
}

// Unique (opset 11): distinct elements (or slices along axis), sorted or in
// order of first occurrence, with first indices, inverse indices and counts.
KernelResult make_unique(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool sorted = node.attr_int("sorted", 1) != 0;
  const bool has_axis = node.find_attribute("axis") != nullptr;
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([&node, sorted, has_axis, axis_attr](std::span<const Tensor* const> in,
                                                          std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    int64_t axis = 0, outer = 1, dim = x.size(), inner = 1;
    if (has_axis) {
      if (x.rank() == 0) return Status::bad_input("Unique with an axis needs rank >= 1");
      QT_ASSIGN_OR_RETURN(axis, normalize_axis(node, axis_attr, x.rank()));
      dim = x.dim(axis);
      for (int64_t d = 0; d < x.rank(); ++d)
        if (d != axis) (d < axis ? outer : inner) *= x.dim(d);
    }
    std::vector<int64_t> first, inverse, counts;
    QT_RETURN_IF_ERROR(dispatch_numeric_or_bool(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (dim > 0) kernels::unique_slices<T>(x.data<T>(), outer, dim, inner, sorted, first, inverse, counts);
      return Status::ok();
    }));
    const int64_t n = static_cast<int64_t>(first.size());
    Dims shape{n};
    if (has_axis) {
      shape = x.shape();
      shape[static_cast<size_t>(axis)] = n;
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::gather(x.raw(), dtype_size(x.dtype()), outer, dim, inner, first.data(), n, out[0].raw());
    auto as_tensor = [](const std::vector<int64_t>& v) {
      return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    };
    if (out.size() > 1) out[1] = as_tensor(first);
    if (out.size() > 2) out[2] = as_tensor(inverse);
    if (out.size() > 3) out[3] = as_tensor(counts);
    return Status::ok();
  });
}

}  // namespace quant::interp
