// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, ArgMax, ArgMin, CumSum, TopK.
#include <string>
#include <vector>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/reduce.h"
#include "libquant/kernels/topk.h"

namespace quant::interp {
namespace {

using kernels::ReduceOp;

bool is_integer_index_type(DType t) { return t == DType::Int64 || t == DType::Int32; }

// [outer, len, inner] view of `shape` around `axis`.
void split_at_axis(const Dims& shape, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner) {
  outer = 1;
  inner = 1;
  len = shape[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) outer *= shape[static_cast<size_t>(d)];
    if (d > axis) inner *= shape[static_cast<size_t>(d)];
  }
}

struct ReduceAttrs {
  ReduceOp op;
  bool keepdims;
  // ReduceX-18 (ReduceSum-13): empty or missing axes mean "identity" instead of "all axes".
  bool noop_with_empty_axes;
  bool axes_from_input;
  Dims axes_attr;
};

Status run_reduce(const ir::Node& node, const ReduceAttrs& a, std::span<const Tensor* const> in,
                  std::vector<Tensor>& out) {
  QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const Tensor& x = *in[0];
  Dims axes = a.axes_attr;
  if (a.axes_from_input && in.size() > 1 && in[1]) {
    const Tensor& t = *in[1];
    if (!is_integer_index_type(t.dtype()) || t.rank() > 1)
      return Status::bad_input(node.op_type + " axes must be a 1-D int64 tensor, got " + std::string(dtype_name(t.dtype())) +
                               " " + dims_to_string(t.shape()));
    axes.clear();
    for (int64_t i = 0; i < t.size(); ++i) axes.push_back(t.as_int64(i));
  }
  if (axes.empty() && a.noop_with_empty_axes) {
    out[0] = x;
    return Status::ok();
  }
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), axes.empty());
  for (int64_t axis : axes) {
    QT_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(node, axis, x.rank()));
    if (x.rank() == 0) continue;  // a scalar: axis 0 / -1 are accepted and reduce nothing
    if (reduced[static_cast<size_t>(ax)]) return Status::bad_input(node.op_type + " axes repeat axis " + std::to_string(axis));
    reduced[static_cast<size_t>(ax)] = true;
  }
  Dims shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!reduced[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
    else if (a.keepdims) shape.push_back(1);
  }
  QT_RETURN_IF_ERROR(reuse_or_create(out[0], x.dtype(), std::move(shape)));
  // std::vector<bool> is packed: copy into a plain array for the span.
  std::unique_ptr<bool[]> flags(new bool[reduced.size() + 1]);
  for (size_t i = 0; i < reduced.size(); ++i) flags[i] = reduced[i];
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    kernels::reduce<T>(a.op, x.data<T>(), x.shape(), std::span<const bool>(flags.get(), reduced.size()), out[0].data<T>());
    return Status::ok();
  });
}

KernelResult make_reduce(const KernelContext& ctx, ReduceOp op) {
  const ir::Node& node = ctx.node;
  ReduceAttrs a;
  a.op = op;
  a.keepdims = node.attr_int("keepdims", 1) != 0;
  // Axes moved from an attribute to an optional input in ReduceSum-13 and in
  // every other ReduceX-18; noop_with_empty_axes came with the same change.
  a.axes_from_input = ctx.opset >= (op == ReduceOp::Sum ? 13 : 18);
  a.noop_with_empty_axes = a.axes_from_input && node.attr_int("noop_with_empty_axes", 0) != 0;
  a.axes_attr = a.axes_from_input ? Dims{} : node.attr_ints("axes");
  if (a.axes_from_input && node.find_attribute("axes"))
    return Status::bad_input(node.op_type + " opset " + std::to_string(ctx.opset) + " takes axes as an input, not an attribute");
  return make_kernel([&node, a](std::span<const Tensor* const> in, std::vector<Tensor>& out) {
    return run_reduce(node, a, in, out);
  });
}

KernelResult make_arg_reduce(const KernelContext& ctx, bool is_max) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  // select_last_index arrived in ArgMax-12; earlier opsets pick the first index.
  const bool last = ctx.opset >= 12 && node.attr_int("select_last_index", 0) != 0;
  return make_kernel([&node, axis_attr, keepdims, last, is_max](std::span<const Tensor* const> in,
                                                               std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() == 0) return Status::bad_input(node.op_type + " input must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    int64_t outer, len, inner;
    split_at_axis(x.shape(), axis, outer, len, inner);
    if (len == 0) return Status::bad_input(node.op_type + " cannot reduce the empty axis " + std::to_string(axis));
    Dims shape = x.shape();
    if (keepdims) shape[static_cast<size_t>(axis)] = 1;
    else shape.erase(shape.begin() + axis);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Int64, shape));
    return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::arg_reduce<T>(is_max, last, x.data<T>(), outer, len, inner, out[0].data<int64_t>());
      return Status::ok();
    });
  });
}

// Reads a scalar integer input (CumSum axis, TopK k): rank 0 or a single element.
Expected<int64_t> scalar_int_input(const ir::Node& node, const Tensor& t, const char* what) {
  if (!is_integer_index_type(t.dtype()) || t.size() != 1 || t.rank() > 1)
    return Status::bad_input(node.op_type + " " + what + " must be one int32/int64 value, got " +
                             std::string(dtype_name(t.dtype())) + " " + dims_to_string(t.shape()));
  return t.as_int64(0);
}

}  // namespace

KernelResult make_reduce_sum(const KernelContext& c) { return make_reduce(c, ReduceOp::Sum); }
KernelResult make_reduce_mean(const KernelContext& c) { return make_reduce(c, ReduceOp::Mean); }
KernelResult make_reduce_max(const KernelContext& c) { return make_reduce(c, ReduceOp::Max); }
KernelResult make_reduce_min(const KernelContext& c) { return make_reduce(c, ReduceOp::Min); }
KernelResult make_reduce_prod(const KernelContext& c) { return make_reduce(c, ReduceOp::Prod); }
KernelResult make_reduce_l1(const KernelContext& c) { return make_reduce(c, ReduceOp::L1); }
KernelResult make_reduce_l2(const KernelContext& c) { return make_reduce(c, ReduceOp::L2); }
KernelResult make_reduce_log_sum(const KernelContext& c) { return make_reduce(c, ReduceOp::LogSum); }
KernelResult make_reduce_log_sum_exp(const KernelContext& c) { return make_reduce(c, ReduceOp::LogSumExp); }
KernelResult make_reduce_sum_square(const KernelContext& c) { return make_reduce(c, ReduceOp::SumSquare); }
KernelResult make_argmax(const KernelContext& c) { return make_arg_reduce(c, true); }
KernelResult make_argmin(const KernelContext& c) { return make_arg_reduce(c, false); }

// CumSum-11/14: axis is a scalar input; exclusive and reverse attributes.
KernelResult make_cumsum(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  return make_kernel([&node, exclusive, reverse](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    if (x.rank() == 0) return Status::bad_input("CumSum input must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis_value, scalar_int_input(node, *in[1], "axis"));
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_value, x.rank()));
    int64_t outer, len, inner;
    split_at_axis(x.shape(), axis, outer, len, inner);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::cumsum<T>(x.data<T>(), outer, len, inner, exclusive, reverse, out[0].data<T>());
      return Status::ok();
    });
  });
}

// TopK: k is an attribute in opset 1 and a 1-element int64 input from opset
// 10; largest and sorted arrived in opset 11. The output is always sorted, as
// sorted=0 leaves the order to the implementation.
KernelResult make_topk(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool k_from_input = ctx.opset >= 10;
  const int64_t k_attr = node.attr_int("k", -1);
  const int64_t axis_attr = node.attr_int("axis", -1);
  const bool largest = ctx.opset < 11 || node.attr_int("largest", 1) != 0;
  if (!k_from_input && k_attr < 0) return Status::bad_input("TopK (opset < 10) needs the k attribute");
  return make_kernel([&node, k_from_input, k_attr, axis_attr, largest](std::span<const Tensor* const> in,
                                                                        std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, k_from_input ? 2 : 1));
    const Tensor& x = *in[0];
    if (x.rank() == 0) return Status::bad_input("TopK input must have rank >= 1");
    int64_t k = k_attr;
    if (k_from_input) {
      QT_ASSIGN_OR_RETURN(k, scalar_int_input(node, *in[1], "k"));
    }
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    int64_t outer, len, inner;
    split_at_axis(x.shape(), axis, outer, len, inner);
    if (k < 0 || k > len)
      return Status::bad_input("TopK k = " + std::to_string(k) + " is outside [0, " + std::to_string(len) + "] for input " +
                               dims_to_string(x.shape()) + " along axis " + std::to_string(axis));
    Dims shape = x.shape();
    shape[static_cast<size_t>(axis)] = k;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    if (out.size() > 1) {
      QT_ASSIGN_OR_RETURN(out[1], Tensor::create(DType::Int64, shape));
    }
    Tensor indices_scratch;
    int64_t* indices = out.size() > 1 ? out[1].data<int64_t>() : nullptr;
    if (!indices) {
      QT_ASSIGN_OR_RETURN(indices_scratch, Tensor::create(DType::Int64, shape));
      indices = indices_scratch.data<int64_t>();
    }
    std::vector<int64_t> scratch(static_cast<size_t>(len));
    return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::topk<T>(x.data<T>(), outer, len, inner, k, largest, out[0].data<T>(), indices, scratch.data());
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
