// Shape-only ops: Reshape, Flatten, Transpose, Concat, Identity, Constant,
// Squeeze, Unsqueeze, Shape, Size, Expand, Tile. All move bytes only, so they
// serve every element type (bool included).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/layout.h"

namespace quant::interp {
namespace {

// out = in[0]'s elements under `shape`, of the same count. In place (the
// Session handed input 0's own tensor as the output, Kernel::reshapes_input)
// only the shape changes: ShuffleNet's channel shuffle reshapes twice per
// block, each a copy of up to 91 000 floats before. Otherwise the bytes go
// to the planned buffer (interp/output.h); strings and sequences are copied
// whole.
Status reshaped(std::span<const Tensor* const> in, Tensor& out, Dims shape) {
  const Tensor& x = *in[0];
  if (&x == &out) {
    out.reshape(std::move(shape));
    return Status::ok();
  }
  if (!x.is_tensor() || x.dtype() == DType::String) {
    out = x;
    out.reshape(std::move(shape));
    return Status::ok();
  }
  QT_RETURN_IF_ERROR(reuse_or_create(out, x.dtype(), std::move(shape)));
  if (x.byte_size() > 0) std::memcpy(out.raw(), x.raw(), x.byte_size());
  return Status::ok();
}

}  // namespace

// Reshape (opset 5+: target shape as input 1; 0 copies the input dim unless
// allowzero=1 (opset 14), -1 is inferred).
KernelResult make_reshape(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (ctx.opset < 5) return Status::bad_input("Reshape before opset 5 (shape attribute) is not supported");
  const bool allowzero = node.attr_int("allowzero", 0) != 0;
  return make_reshaping_kernel([&node, allowzero](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& s = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, s, DType::Int64, "shape"));
    Dims shape(s.values<int64_t>().begin(), s.values<int64_t>().end());
    // Reshape-14: "allowzero=1 ... it is invalid for the shape to contain both a zero value and -1".
    if (allowzero && std::count(shape.begin(), shape.end(), 0) > 0 && std::count(shape.begin(), shape.end(), -1) > 0)
      return Status::bad_input("Reshape with allowzero=1 cannot have both 0 and -1 in the shape");
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
    return reshaped(in, out[0], std::move(shape));
  });
}

// Flatten: 2-D [prod(dims[:axis]), prod(dims[axis:])]; negative axis from opset 11.
KernelResult make_flatten(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 1);
  return make_reshaping_kernel([&node, axis_attr](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    int64_t axis = axis_attr < 0 ? axis_attr + x.rank() : axis_attr;
    if (axis < 0 || axis > x.rank()) return Status::bad_input("Flatten axis " + std::to_string(axis_attr) + " out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
    return reshaped(in, out[0], {outer, inner});
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
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], x.dtype(), std::move(shape)));
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
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], first.dtype(), shape));
    // Inputs the memory plan computed into their slices of this output are
    // not copied (output.h's inputs_in_slices).
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
    QT_ASSIGN_OR_RETURN(std::vector<char> in_slice, inputs_in_slices(out[0], first.dtype(), shape, in, outer));
    if (std::find(in_slice.begin(), in_slice.end(), 1) == in_slice.end()) {
      kernels::concat(ptrs, shapes, axis, dtype_size(first.dtype()), out[0].raw());
      return Status::ok();
    }
    auto* y = static_cast<std::byte*>(out[0].raw());
    for (size_t k = 0; k < in.size(); ++k) {
      const size_t bytes = in[k]->byte_size();
      if (!in_slice[k] && bytes > 0) std::memcpy(y, in[k]->raw(), bytes);
      y += bytes;
    }
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

namespace {

// Squeeze/Unsqueeze axes: the attribute before opset 13, the optional input
// from 13 on. `present` tells whether any was given.
Expected<Dims> axes_of(const ir::Node& node, bool from_input, const Dims& attr, bool attr_present,
                       std::span<const Tensor* const> in, bool& present) {
  if (!from_input) {
    present = attr_present;
    return attr;
  }
  present = in.size() > 1 && in[1];
  if (!present) return Dims();
  return read_int_list(node, *in[1], "axes");
}

}  // namespace

// Squeeze (opset 1-13): removes the listed dims, which must be 1; without axes
// every dim of size 1.
KernelResult make_squeeze(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool from_input = ctx.opset >= 13;
  const bool attr_present = node.find_attribute("axes") != nullptr;
  const Dims attr = node.attr_ints("axes");
  return make_reshaping_kernel([&node, from_input, attr_present, attr](std::span<const Tensor* const> in,
                                                                       std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    bool present = false;
    QT_ASSIGN_OR_RETURN(Dims axes, axes_of(node, from_input, attr, attr_present, in, present));
    std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
    if (present) {
      QT_ASSIGN_OR_RETURN(Dims norm, normalize_axes(node, axes, x.rank()));
      for (int64_t a : norm) {
        if (x.dim(a) != 1)
          return Status::bad_input("Squeeze axis " + std::to_string(a) + " of " + dims_to_string(x.shape()) + " is not 1");
        drop[static_cast<size_t>(a)] = true;
      }
    } else {
      for (int64_t d = 0; d < x.rank(); ++d) drop[static_cast<size_t>(d)] = x.dim(d) == 1;
    }
    Dims shape;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (!drop[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
    return reshaped(in, out[0], std::move(shape));
  });
}

// Unsqueeze (opset 1-13): inserts dims of 1 at the listed positions of the
// output (negative axes count from the back of the output, opset 11+).
KernelResult make_unsqueeze(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool from_input = ctx.opset >= 13;
  const bool attr_present = node.find_attribute("axes") != nullptr;
  const Dims attr = node.attr_ints("axes");
  if (!from_input && !attr_present) return Status::bad_input("Unsqueeze needs an axes attribute before opset 13");
  return make_reshaping_kernel([&node, from_input, attr_present, attr](std::span<const Tensor* const> in,
                                                                       std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, from_input ? 2 : 1));
    const Tensor& x = *in[0];
    bool present = false;
    QT_ASSIGN_OR_RETURN(Dims axes, axes_of(node, from_input, attr, attr_present, in, present));
    const int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
    QT_ASSIGN_OR_RETURN(Dims norm, normalize_axes(node, axes, rank));
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t a : norm) inserted[static_cast<size_t>(a)] = true;
    Dims shape;
    int64_t next = 0;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.dim(next++));
    return reshaped(in, out[0], std::move(shape));
  });
}

// Shape (opset 1-15): the dims as int64; opset 15 keeps dims [start, end),
// negative values counting from the back, both clamped to [0, rank].
KernelResult make_shape(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t start_attr = node.attr_int("start", 0);
  const bool has_end = node.find_attribute("end") != nullptr;
  const int64_t end_attr = node.attr_int("end", 0);
  return make_kernel([&node, start_attr, has_end, end_attr](std::span<const Tensor* const> in,
                                                            std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const int64_t rank = in[0]->rank();
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(start_attr), end = has_end ? clamp(end_attr) : rank;
    Dims dims(in[0]->shape().begin() + start, in[0]->shape().begin() + std::max(start, end));
    out[0] = Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
    return Status::ok();
  });
}

// Size (opset 1-13): the element count as an int64 scalar.
KernelResult make_size(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    out[0] = Tensor::scalar<int64_t>(in[0]->size());
    return Status::ok();
  });
}

// Expand (opset 8-13): broadcasts the input against `shape` in both
// directions (numpy rules), so a 1 in `shape` keeps the input's dim.
KernelResult make_expand(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    QT_ASSIGN_OR_RETURN(Dims target, read_int_list(node, *in[1], "shape"));
    auto shape = kernels::broadcast_shapes(x.shape(), target);
    if (!shape)
      return Status::bad_input("Expand cannot broadcast " + dims_to_string(x.shape()) + " to " + dims_to_string(target));
    QT_RETURN_IF_ERROR(check_computed_shape(node, *shape));
    // Read x as a tensor of the output's rank (leading 1s); a dim of 1 maps every output index to 0.
    const size_t rank = shape->size(), lead = rank - static_cast<size_t>(x.rank());
    Dims x_shape(lead, 1);
    x_shape.insert(x_shape.end(), x.shape().begin(), x.shape().end());
    std::vector<Dims> maps(rank);
    for (size_t d = 0; d < rank; ++d) {
      maps[d].resize(static_cast<size_t>((*shape)[d]));
      for (size_t o = 0; o < maps[d].size(); ++o) maps[d][o] = x_shape[d] == 1 ? 0 : static_cast<int64_t>(o);
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), *shape));
    kernels::remap_axes(x.raw(), dtype_size(x.dtype()), x_shape, maps, nullptr, out[0].raw());
    return Status::ok();
  });
}

// Tile (opset 6-13): output dim d is input dim d times repeats[d].
KernelResult make_tile(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (ctx.opset < 6) return Status::bad_input("Tile before opset 6 (tiles/axis inputs) is not supported");
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    QT_ASSIGN_OR_RETURN(Dims repeats, read_int_list(node, *in[1], "repeats"));
    if (static_cast<int64_t>(repeats.size()) != x.rank())
      return Status::bad_input("Tile repeats has " + std::to_string(repeats.size()) + " values for rank " +
                               std::to_string(x.rank()));
    Dims shape(repeats.size());
    for (size_t d = 0; d < repeats.size(); ++d) {
      if (repeats[d] < 0) return Status::bad_input("Tile repeats must be >= 0");
      if (x.shape()[d] != 0 && repeats[d] > kMaxComputedElements / x.shape()[d])
        return Status::bad_input("Tile output is too large");
      shape[d] = x.shape()[d] * repeats[d];
    }
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    std::vector<Dims> maps(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      maps[d].resize(static_cast<size_t>(shape[d]));
      for (size_t o = 0; o < maps[d].size(); ++o) maps[d][o] = static_cast<int64_t>(o) % x.shape()[d];
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    kernels::remap_axes(x.raw(), dtype_size(x.dtype()), x.shape(), maps, nullptr, out[0].raw());
    return Status::ok();
  });
}

}  // namespace quant::interp
