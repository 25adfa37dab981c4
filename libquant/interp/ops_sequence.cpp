// Sequence and Optional values (opset 11-18): SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement. The
// values ride in a Tensor of kind Sequence or Optional (core/tensor.h), so
// Identity, If and Loop carry them unchanged. SequenceMap, which runs a body,
// is with the control-flow ops (ops_control.cpp).
#include <cstring>
#include <string>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/layout.h"

namespace quant::interp {
namespace {

Status require_sequence(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.kind() != Tensor::Kind::Sequence)
    return Status::bad_input(node.op_type + " " + what + " must be a sequence, got " + describe_value(t));
  return Status::ok();
}

Status require_tensor(const ir::Node& node, const Tensor& t, const char* what) {
  if (!t.is_tensor()) return Status::bad_input(node.op_type + " " + what + " must be a tensor, got " + describe_value(t));
  return Status::ok();
}

// A position input: an int32/int64 scalar in [-count, last], negative counting from the back.
Expected<int64_t> read_position(const ir::Node& node, const Tensor& t, int64_t count, int64_t last) {
  QT_ASSIGN_OR_RETURN(Dims v, read_int_list(node, t, "position"));
  if (v.size() != 1)
    return Status::bad_input(node.op_type + " position must be a scalar, got " + dims_to_string(t.shape()));
  const int64_t p = v[0];
  if (p < -count || p > last)
    return Status::bad_input(node.op_type + " position " + std::to_string(p) + " is out of range for a sequence of " +
                             std::to_string(count));
  return p < 0 ? p + count : p;
}

// The element type a sequence op's tensor must have: the sequence's, when it knows one.
Status check_element(const ir::Node& node, const Tensor& seq, const Tensor& t) {
  if (seq.elem_dtype() != DType::Undefined && t.dtype() != seq.elem_dtype())
    return Status::bad_input(node.op_type + " tensor of type " + std::string(dtype_name(t.dtype())) +
                             " does not fit a sequence of " + std::string(dtype_name(seq.elem_dtype())));
  return Status::ok();
}

}  // namespace

Tensor slice_along(const Tensor& t, int64_t axis, int64_t start, int64_t len) {
  Dims shape = t.shape();
  const int64_t full = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = len;
  Tensor out(t.dtype(), shape);  // a part of t: no larger than a tensor that exists
  const size_t es = dtype_size(t.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < t.rank(); ++d)
    if (d != axis) (d < axis ? outer : inner) *= t.dim(d);
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * len * inner * es, src + (o * full + start) * inner * es, static_cast<size_t>(len * inner) * es);
  return out;
}

// SequenceEmpty (opset 11): an empty sequence of `dtype` (default float32).
KernelResult make_sequence_empty(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  std::optional<DType> t = dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 1)));
  if (!t) return Status::bad_input("SequenceEmpty dtype " + std::to_string(node.attr_int("dtype", 1)) + " is not supported");
  const DType elem = *t;
  return make_kernel([elem](std::span<const Tensor* const>, std::vector<Tensor>& out) -> Status {
    out[0] = Tensor::sequence(elem, {});
    return Status::ok();
  });
}

// SequenceConstruct (opset 11): the inputs, all of one element type, as a sequence.
KernelResult make_sequence_construct(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, in.size()));
    if (in.empty()) return Status::bad_input("SequenceConstruct needs at least one input");
    std::vector<Tensor> items;
    for (const Tensor* t : in) {
      QT_RETURN_IF_ERROR(require_tensor(node, *t, "input"));
      if (t->dtype() != in[0]->dtype()) return Status::bad_input("SequenceConstruct inputs differ in type");
      items.push_back(*t);
    }
    out[0] = Tensor::sequence(in[0]->dtype(), std::move(items));
    return Status::ok();
  });
}

// SequenceInsert (opset 11): the tensor inserted before `position` (default: appended).
KernelResult make_sequence_insert(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    QT_RETURN_IF_ERROR(require_sequence(node, *in[0], "input_sequence"));
    QT_RETURN_IF_ERROR(require_tensor(node, *in[1], "tensor"));
    QT_RETURN_IF_ERROR(check_element(node, *in[0], *in[1]));
    std::vector<Tensor> items = in[0]->items();
    const int64_t n = static_cast<int64_t>(items.size());
    int64_t pos = n;
    if (in.size() > 2 && in[2]) {
      QT_ASSIGN_OR_RETURN(pos, read_position(node, *in[2], n, n));
    }
    items.insert(items.begin() + pos, *in[1]);
    out[0] = Tensor::sequence(in[1]->dtype(), std::move(items));
    return Status::ok();
  });
}

// SequenceAt (opset 11): the tensor at `position`.
KernelResult make_sequence_at(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    QT_RETURN_IF_ERROR(require_sequence(node, *in[0], "input_sequence"));
    const int64_t n = static_cast<int64_t>(in[0]->items().size());
    QT_ASSIGN_OR_RETURN(int64_t pos, read_position(node, *in[1], n, n - 1));
    out[0] = in[0]->items()[static_cast<size_t>(pos)];
    return Status::ok();
  });
}

// SequenceErase (opset 11): the sequence without the tensor at `position` (default: the last).
KernelResult make_sequence_erase(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_sequence(node, *in[0], "input_sequence"));
    std::vector<Tensor> items = in[0]->items();
    const int64_t n = static_cast<int64_t>(items.size());
    if (n == 0) return Status::bad_input("SequenceErase on an empty sequence");
    int64_t pos = n - 1;
    if (in.size() > 1 && in[1]) {
      QT_ASSIGN_OR_RETURN(pos, read_position(node, *in[1], n, n - 1));
    }
    items.erase(items.begin() + pos);
    out[0] = Tensor::sequence(in[0]->elem_dtype(), std::move(items));
    return Status::ok();
  });
}

// SequenceLength (opset 11): the number of tensors, an int64 scalar.
KernelResult make_sequence_length(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_sequence(node, *in[0], "input_sequence"));
    out[0] = Tensor::scalar<int64_t>(static_cast<int64_t>(in[0]->items().size()));
    return Status::ok();
  });
}

// SplitToSequence (opset 11): `split` absent: pieces of 1 along axis, the axis
// removed unless keepdims; a scalar: pieces of that size (the last may be
// shorter); a 1-D tensor: the piece sizes, which must add up to the axis.
KernelResult make_split_to_sequence(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  return make_kernel([&node, axis_attr, keepdims](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(require_tensor(node, x, "input"));
    if (x.rank() == 0) return Status::bad_input("SplitToSequence input must have rank >= 1, got a scalar");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    const int64_t len = x.dim(axis);
    Dims sizes;
    bool squeeze = false;
    if (in.size() > 1 && in[1]) {
      QT_ASSIGN_OR_RETURN(Dims split, read_int_list(node, *in[1], "split"));
      if (in[1]->rank() == 0) {
        if (split[0] < 1) return Status::bad_input("SplitToSequence split must be >= 1, got " + std::to_string(split[0]));
        for (int64_t s = 0; s < len; s += split[0]) sizes.push_back(std::min(split[0], len - s));
      } else {
        int64_t total = 0;
        for (int64_t s : split) {
          if (s < 0) return Status::bad_input("SplitToSequence split sizes must be >= 0");
          total += s;
        }
        if (total != len)
          return Status::bad_input("SplitToSequence split " + dims_to_string(split) + " does not add up to " + std::to_string(len));
        sizes = split;
      }
    } else {
      sizes.assign(static_cast<size_t>(len), 1);
      squeeze = !keepdims;
    }
    std::vector<Tensor> items;
    int64_t start = 0;
    for (int64_t s : sizes) {
      Tensor piece = slice_along(x, axis, start, s);
      if (squeeze) {
        Dims shape = piece.shape();
        shape.erase(shape.begin() + axis);
        piece.reshape(std::move(shape));
      }
      items.push_back(std::move(piece));
      start += s;
    }
    out[0] = Tensor::sequence(x.dtype(), std::move(items));
    return Status::ok();
  });
}

// ConcatFromSequence (opset 11): the tensors joined along `axis`, or stacked
// along a new axis when new_axis = 1 (axis may then be rank, i.e. -rank-1..rank).
KernelResult make_concat_from_sequence(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (!node.find_attribute("axis")) return Status::bad_input("ConcatFromSequence needs an axis attribute");
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  return make_kernel([&node, axis_attr, new_axis](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_sequence(node, *in[0], "input_sequence"));
    const std::vector<Tensor>& items = in[0]->items();
    if (items.empty()) return Status::bad_input("ConcatFromSequence needs a non-empty sequence");
    const Tensor& first = items[0];
    const int64_t rank = first.rank() + (new_axis ? 1 : 0);
    if (rank == 0) return Status::bad_input("ConcatFromSequence of scalars needs new_axis = 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, rank));
    std::vector<const void*> ptrs;
    std::vector<Dims> shapes;
    Dims shape;
    for (const Tensor& t : items) {
      Dims s = t.shape();
      if (new_axis) s.insert(s.begin() + axis, 1);
      if (t.dtype() != first.dtype() || static_cast<int64_t>(s.size()) != rank)
        return Status::bad_input("ConcatFromSequence tensors differ in type or rank");
      if (shape.empty()) {
        shape = s;
        shape[static_cast<size_t>(axis)] = 0;
      }
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && s[static_cast<size_t>(d)] != shape[static_cast<size_t>(d)])
          return Status::bad_input("ConcatFromSequence tensors " + dims_to_string(first.shape()) + " and " +
                                   dims_to_string(t.shape()) + " differ off the axis");
      shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
      ptrs.push_back(t.raw());
      shapes.push_back(std::move(s));
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(first.dtype(), shape));
    kernels::concat(ptrs, shapes, axis, dtype_size(first.dtype()), out[0].raw());
    return Status::ok();
  });
}

// Optional (opset 15): the input wrapped, or an empty optional of the `type` attribute.
KernelResult make_optional(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    if (!in.empty() && in[0]) {
      out[0] = Tensor::optional(*in[0]);
      return Status::ok();
    }
    if (!node.find_attribute("type")) return Status::bad_input("Optional without an input needs the type attribute");
    out[0] = Tensor::optional(std::nullopt);
    return Status::ok();
  });
}

// OptionalHasElement (opset 15; opset 18 also takes a tensor or sequence, and
// no input at all): whether a value is there, as a bool scalar.
KernelResult make_optional_has_element(const KernelContext&) {
  return make_kernel([](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    bool has = !in.empty() && in[0] != nullptr;
    if (has && in[0]->kind() == Tensor::Kind::Optional) has = !in[0]->items().empty();
    out[0] = Tensor(DType::Bool, {});
    out[0].data<uint8_t>()[0] = has ? 1 : 0;
    return Status::ok();
  });
}

// OptionalGetElement (opset 15; opset 18 passes a tensor or sequence through):
// the value inside; an empty optional is an error.
KernelResult make_optional_get_element(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    if (in[0]->kind() != Tensor::Kind::Optional) {
      out[0] = *in[0];
      return Status::ok();
    }
    if (in[0]->items().empty()) return Status::bad_input("OptionalGetElement of an empty optional");
    out[0] = in[0]->items()[0];
    return Status::ok();
  });
}

}  // namespace quant::interp
