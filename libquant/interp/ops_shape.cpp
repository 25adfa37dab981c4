// Shape-only ops: Reshape, Flatten, Transpose, Concat, Identity, Constant.
#include <cstdint>
#include <cstring>
#include <numeric>

#include "libquant/interp/ops.h"
#include "libquant/kernels/layout.h"

namespace quant::interp {
namespace {

Tensor copy_with_shape(const Tensor& x, Dims shape) {
  Tensor y(x);
  y.reshape(std::move(shape));
  return y;
}

}  // namespace

// Reshape (opset 5+: target shape as input 1; 0 copies the input dim unless
// allowzero=1 (opset 14), -1 is inferred).
KernelResult make_reshape(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (ctx.opset < 5) return Status::bad_input("Reshape before opset 5 (shape attribute) is not supported");
  const bool allowzero = node.attr_int("allowzero", 0) != 0;
  return make_kernel([&node, allowzero](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& s = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, s, DType::Int64, "shape"));
    Dims shape(s.values<int64_t>().begin(), s.values<int64_t>().end());
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allowzero) {
        if (i >= x.shape().size()) return Status::bad_input("Reshape copies dim " + std::to_string(i) + " the input lacks");
        shape[i] = x.shape()[i];
      }
      if (shape[i] == -1) {
        if (infer >= 0) return Status::bad_input("Reshape shape has more than one -1");
        infer = static_cast<int>(i);
      } else if (shape[i] < 0) {
        return Status::bad_input("Reshape shape has a negative dim " + std::to_string(shape[i]));
      } else if (shape[i] != 0 && known > INT64_MAX / shape[i]) {
        // A product that overflows could wrap around to the input's size.
        return Status::bad_input("Reshape shape " + dims_to_string(shape) + " has more elements than fit in 64 bits");
      } else {
        known *= shape[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || x.size() % known != 0)
        return Status::bad_input("cannot reshape " + dims_to_string(x.shape()) + " to " + dims_to_string(shape));
      shape[static_cast<size_t>(infer)] = x.size() / known;
    }
    if (known * (infer >= 0 ? shape[static_cast<size_t>(infer)] : 1) != x.size())
      return Status::bad_input("cannot reshape " + dims_to_string(x.shape()) + " to " + dims_to_string(shape));
    out[0] = copy_with_shape(x, shape);
    return Status::ok();
  });
}

// Flatten: 2-D [prod(dims[:axis]), prod(dims[axis:])]; negative axis from opset 11.
KernelResult make_flatten(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 1);
  return make_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    int64_t axis = axis_attr < 0 ? axis_attr + x.rank() : axis_attr;
    if (axis < 0 || axis > x.rank()) return Status::bad_input("Flatten axis " + std::to_string(axis_attr) + " out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
    out[0] = copy_with_shape(x, {outer, inner});
    return Status::ok();
  });
}

KernelResult make_transpose(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Dims perm_attr = node.attr_ints("perm");
  return make_kernel([&node, perm_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    Dims perm = perm_attr;
    if (perm.empty()) {  // default: reverse the dims
      perm.resize(static_cast<size_t>(x.rank()));
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (static_cast<int64_t>(perm.size()) != x.rank())
      return Status::bad_input("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.rank()));
    std::vector<bool> seen(perm.size(), false);
    Dims shape;
    for (int64_t p : perm) {
      if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)]) return Status::bad_input("perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
      shape.push_back(x.dim(p));
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::transpose(x.raw(), dtype_size(x.dtype()), x.shape(), perm, out[0].raw());
    return Status::ok();
  });
}

KernelResult make_concat(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (!node.find_attribute("axis")) return Status::bad_input("Concat needs an axis attribute");
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, in.size()));
    if (in.empty()) return Status::bad_input("Concat needs at least one input");
    const Tensor& first = *in[0];
    if (first.rank() == 0) return Status::bad_input("Concat inputs must have rank >= 1, got a scalar");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, first.rank()));
    Dims shape = first.shape();
    shape[static_cast<size_t>(axis)] = 0;
    std::vector<const void*> ptrs;
    std::vector<Dims> shapes;
    for (const Tensor* t : in) {
      if (t->dtype() != first.dtype() || t->rank() != first.rank())
        return Status::bad_input("Concat inputs differ in type or rank");
      for (int64_t d = 0; d < first.rank(); ++d)
        if (d != axis && t->dim(d) != first.dim(d))
          return Status::bad_input("Concat inputs " + dims_to_string(first.shape()) + " and " + dims_to_string(t->shape()) +
                                   " differ off the axis");
      shape[static_cast<size_t>(axis)] += t->dim(axis);
      ptrs.push_back(t->raw());
      shapes.push_back(t->shape());
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(first.dtype(), shape));
    kernels::concat(ptrs, shapes, axis, dtype_size(first.dtype()), out[0].raw());
    return Status::ok();
  });
}

KernelResult make_identity(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    out[0] = *in[0];
    return Status::ok();
  });
}

// Constant (opset 1-13): value, or from opset 12 value_float(s) / value_int(s).
KernelResult make_constant(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  Tensor value;
  if (const ir::Attribute* a = node.find_attribute("value"); a && a->kind == ir::Attribute::Kind::Tensor) {
    value = *a->t;
  } else if (const ir::Attribute* f = node.find_attribute("value_float")) {
    value = Tensor::scalar<float>(f->f);
  } else if (const ir::Attribute* fs = node.find_attribute("value_floats")) {
    value = Tensor::from_vector<float>({static_cast<int64_t>(fs->floats.size())}, fs->floats);
  } else if (const ir::Attribute* i = node.find_attribute("value_int")) {
    value = Tensor::scalar<int64_t>(i->i);
  } else if (const ir::Attribute* is = node.find_attribute("value_ints")) {
    value = Tensor::from_vector<int64_t>({static_cast<int64_t>(is->ints.size())}, is->ints);
  } else {
    return Status::bad_input("Constant has no supported value attribute");
  }
  return make_kernel([value = std::move(value)](std::span<const Tensor* const>, std::vector<Tensor>& out) -> Status {
    out[0] = value;
    return Status::ok();
  });
}

}  // namespace quant::interp
