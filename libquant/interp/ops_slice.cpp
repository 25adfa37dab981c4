// Ops that cut, pad or rearrange regions of a tensor: Slice, Split, Pad,
// DepthToSpace, SpaceToDepth, ReverseSequence. All move bytes only, so they
// serve every element type.
#include <algorithm>
#include <cstring>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/layout.h"

namespace quant::interp {
namespace {

struct SliceArgs {
  Dims starts, ends, axes, steps;  // axes/steps empty: defaults
};

// Slice maps: for each axis the input index of every output index
// (start + j*step), clamped as Slice-13 specifies:
//   negative start/end get dim added; then for step > 0 start and end are
//   clamped to [0, dim], for step < 0 start to [0, dim-1] and end to [-1, dim-1];
//   the count is max(0, ceil((end - start) / step)).
Expected<std::vector<Dims>> slice_maps(const ir::Node& node, const SliceArgs& a, const Dims& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const size_t n = a.starts.size();
  if (a.ends.size() != n) return Status::bad_input("Slice starts and ends differ in length");
  Dims axes = a.axes;
  if (axes.empty()) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != n) return Status::bad_input("Slice axes and starts differ in length");
  if (!a.steps.empty() && a.steps.size() != n) return Status::bad_input("Slice steps and starts differ in length");
  QT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, rank));
  std::vector<Dims> maps(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    maps[d].resize(static_cast<size_t>(shape[d]));
    for (size_t o = 0; o < maps[d].size(); ++o) maps[d][o] = static_cast<int64_t>(o);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t dim = shape[static_cast<size_t>(axes[i])];
    const int64_t step = a.steps.empty() ? 1 : a.steps[i];
    if (step == 0) return Status::bad_input("Slice step must not be 0");
    // Starts/ends may be INT64_MAX/MIN ("to the end"): clamp before adding dim.
    int64_t start = std::clamp<int64_t>(a.starts[i], -dim - 1, dim + 1);
    int64_t end = std::clamp<int64_t>(a.ends[i], -dim - 1, dim + 1);
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    Dims& map = maps[static_cast<size_t>(axes[i])];
    map.resize(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) map[static_cast<size_t>(j)] = start + j * step;
  }
  return maps;
}

// y (the planned buffer when the Session gives one, interp/output.h) = x remapped.
Status remap(const Tensor& x, const std::vector<Dims>& maps, const void* fill, Tensor& y) {
  Dims shape;
  for (const Dims& m : maps) shape.push_back(static_cast<int64_t>(m.size()));
  QT_RETURN_IF_ERROR(reuse_or_create(y, x.dtype(), std::move(shape)));
  kernels::remap_axes(x.raw(), dtype_size(x.dtype()), x.shape(), maps, fill, y.raw());
  return Status::ok();
}

}  // namespace

// Slice: attributes starts/ends/axes before opset 10, inputs (with steps) from 10 on.
KernelResult make_slice(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool from_inputs = ctx.opset >= 10;
  SliceArgs attrs{node.attr_ints("starts"), node.attr_ints("ends"), node.attr_ints("axes"), {}};
  if (!from_inputs && (!node.find_attribute("starts") || !node.find_attribute("ends")))
    return Status::bad_input("Slice needs starts and ends attributes before opset 10");
  return make_kernel([&node, from_inputs, attrs](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, from_inputs ? 3 : 1));
    const Tensor& x = *in[0];
    SliceArgs a = attrs;
    if (from_inputs) {
      QT_ASSIGN_OR_RETURN(a.starts, read_int_list(node, *in[1], "starts"));
      QT_ASSIGN_OR_RETURN(a.ends, read_int_list(node, *in[2], "ends"));
      if (in.size() > 3 && in[3]) {
        QT_ASSIGN_OR_RETURN(a.axes, read_int_list(node, *in[3], "axes"));
      }
      if (in.size() > 4 && in[4]) {
        QT_ASSIGN_OR_RETURN(a.steps, read_int_list(node, *in[4], "steps"));
      }
    }
    QT_ASSIGN_OR_RETURN(auto maps, slice_maps(node, a, x.shape()));
    QT_RETURN_IF_ERROR(remap(x, maps, nullptr, out[0]));
    return Status::ok();
  });
}

// Split: sizes from the `split` attribute (opset 2-12) or the optional input
// (13+); without them equal parts, which must divide the axis before opset 18
// and from 18 on (num_outputs) are ceil(dim / n) with a smaller last part.
KernelResult make_split(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool sizes_from_input = ctx.opset >= 13 || ctx.opset == 1;
  const Dims split_attr = node.attr_ints("split");
  const size_t n_out = node.outputs.size();
  const bool uneven_ok = ctx.opset >= 18;
  if (n_out == 0) return Status::bad_input("Split needs at least one output");
  if (const ir::Attribute* n = node.find_attribute("num_outputs"); n && n->i != static_cast<int64_t>(n_out))
    return Status::bad_input("Split num_outputs " + std::to_string(n->i) + " differs from its " + std::to_string(n_out) +
                             " outputs");
  return make_kernel([&node, axis_attr, sizes_from_input, split_attr, n_out, uneven_ok](
                         std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    if (x.rank() == 0) return Status::bad_input("Split input must have rank >= 1");
    const int64_t dim = x.dim(axis);
    Dims sizes = split_attr;
    if (sizes_from_input && in.size() > 1 && in[1]) {
      QT_ASSIGN_OR_RETURN(sizes, read_int_list(node, *in[1], "split"));
    }
    if (sizes.empty()) {
      const int64_t n = static_cast<int64_t>(n_out);
      if (dim % n != 0 && !uneven_ok)
        return Status::bad_input("Split cannot cut a dim of " + std::to_string(dim) + " into " + std::to_string(n) + " equal parts");
      const int64_t part = (dim + n - 1) / n;
      for (int64_t k = 0, left = dim; k < n; ++k, left -= part) sizes.push_back(std::clamp<int64_t>(left, 0, part));
    }
    if (sizes.size() != n_out)
      return Status::bad_input("Split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(n_out) + " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0 || s > dim) return Status::bad_input("Split size " + std::to_string(s) + " is out of range");
      total += s;
    }
    if (total != dim)
      return Status::bad_input("Split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
    int64_t offset = 0;
    for (size_t k = 0; k < n_out; ++k) {
      SliceArgs a{{offset}, {offset + sizes[k]}, {axis}, {}};
      offset += sizes[k];
      if (k >= out.size()) break;
      QT_ASSIGN_OR_RETURN(auto maps, slice_maps(node, a, x.shape()));
      QT_RETURN_IF_ERROR(remap(x, maps, nullptr, out[k]));
    }
    return Status::ok();
  });
}

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

// Input index of output index o of an axis padded by `before` (negative
// crops), or -1 for the constant.
int64_t pad_source(PadMode mode, int64_t o, int64_t before, int64_t dim) {
  int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return std::clamp<int64_t>(i, 0, dim - 1);
    case PadMode::Wrap: return ((i % dim) + dim) % dim;
    case PadMode::Reflect: {
      // Mirror without repeating the edge: period 2*(dim-1).
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      i = ((i % period) + period) % period;
      return i < dim ? i : period - i;
    }
  }
  return -1;
}

}  // namespace

// Pad: pads (and value, float) attributes in opset 2-10; from 11 on pads
// [x1_begin, x2_begin, ..., x1_end, ...] and an optional scalar
// constant_value as inputs (opset 18: optional axes). Negative pads crop.
// Pads wider than the axis reflect again, as numpy.pad (the ONNX reference)
// does; edge and reflect need a non-empty axis to pad from.
KernelResult make_pad(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool from_inputs = ctx.opset >= 11;
  const std::string mode_name = node.attr_string("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") mode = PadMode::Constant;
  else if (mode_name == "reflect") mode = PadMode::Reflect;
  else if (mode_name == "edge") mode = PadMode::Edge;
  else if (mode_name == "wrap" && ctx.opset >= 19) mode = PadMode::Wrap;
  else return Status::bad_input("Pad mode '" + mode_name + "' is not supported");
  if (!from_inputs && !node.find_attribute("pads")) return Status::bad_input("Pad needs a pads attribute before opset 11");
  const Dims pads_attr = node.attr_ints("pads");
  const float value_attr = node.attr_float("value", 0.0f);
  return make_kernel([&node, from_inputs, mode, pads_attr, value_attr](std::span<const Tensor* const> in,
                                                                       std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, from_inputs ? 2 : 1));
    const Tensor& x = *in[0];
    const int64_t rank = x.rank();
    Dims pads = pads_attr;
    Dims axes;
    Tensor fill(x.dtype(), {});  // zero of x's type
    if (from_inputs) {
      QT_ASSIGN_OR_RETURN(pads, read_int_list(node, *in[1], "pads"));
      if (in.size() > 2 && in[2]) {
        if (in[2]->dtype() != x.dtype() || in[2]->size() != 1)
          return Status::bad_input("Pad constant_value must be one value of the input's type");
        std::memcpy(fill.raw(), in[2]->raw(), dtype_size(x.dtype()));
      }
      if (in.size() > 3 && in[3]) {
        QT_ASSIGN_OR_RETURN(axes, read_int_list(node, *in[3], "axes"));
      }
    } else if (value_attr != 0.0f) {
      if (x.dtype() == DType::Float32) fill.data<float>()[0] = value_attr;
      else if (x.dtype() == DType::Float64) fill.data<double>()[0] = value_attr;
      else return Status::bad_input("Pad value attribute needs a float input");
    }
    if (axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    QT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, rank));
    const size_t n = axes.size();
    if (pads.size() != 2 * n)
      return Status::bad_input("Pad pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * n));
    std::vector<Dims> maps(static_cast<size_t>(rank));
    Dims before(static_cast<size_t>(rank), 0), after(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < n; ++i) {
      before[static_cast<size_t>(axes[i])] = pads[i];
      after[static_cast<size_t>(axes[i])] = pads[i + n];
    }
    Dims shape(static_cast<size_t>(rank));
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t dim = x.shape()[d];
      if (before[d] > kMaxComputedElements || before[d] < -kMaxComputedElements || after[d] > kMaxComputedElements ||
          after[d] < -kMaxComputedElements)
        return Status::bad_input("Pad pads are too large");
      shape[d] = dim + before[d] + after[d];
      if (shape[d] < 0) return Status::bad_input("Pad crops more than axis " + std::to_string(d) + " holds");
      if (mode != PadMode::Constant && shape[d] > 0 && dim == 0)
        return Status::bad_input("Pad mode " + node.attr_string("mode", "") + " cannot pad an empty axis");
    }
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    for (size_t d = 0; d < shape.size(); ++d) {
      maps[d].resize(static_cast<size_t>(shape[d]));
      for (int64_t o = 0; o < shape[d]; ++o) maps[d][static_cast<size_t>(o)] = pad_source(mode, o, before[d], x.shape()[d]);
    }
    QT_RETURN_IF_ERROR(remap(x, maps, fill.raw(), out[0]));
    return Status::ok();
  });
}

namespace {

// DepthToSpace and SpaceToDepth are a reshape to 6-D, a transpose and a
// reshape back; `blocksize` >= 1 checked by the factories.
Tensor reshape_transpose(const Tensor& x, const Dims& shape6, const Dims& perm, const Dims& out_shape) {
  Tensor y(x.dtype(), out_shape);  // x's elements, rearranged
  kernels::transpose(x.raw(), dtype_size(x.dtype()), shape6, perm, y.raw());
  return y;
}

}  // namespace

// DepthToSpace (opset 11-13): mode DCR (default) reads the channel as
// [b, b, C/b^2], CRD as [C/b^2, b, b].
KernelResult make_depth_to_space(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) return Status::bad_input("DepthToSpace needs blocksize >= 1");
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return Status::bad_input("DepthToSpace mode '" + mode + "' is not DCR or CRD");
  const bool crd = mode == "CRD";
  return make_kernel([&node, b, crd](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() != 4) return Status::bad_input("DepthToSpace input must be 4-D, got " + dims_to_string(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    if (C % (b * b) != 0)
      return Status::bad_input("DepthToSpace channels " + std::to_string(C) + " are not divisible by blocksize^2");
    const int64_t c = C / (b * b);
    const Dims out_shape{N, c, H * b, W * b};
    out[0] = crd ? reshape_transpose(x, {N, c, b, b, H, W}, {0, 1, 4, 2, 5, 3}, out_shape)
                 : reshape_transpose(x, {N, b, b, c, H, W}, {0, 3, 4, 1, 5, 2}, out_shape);
    return Status::ok();
  });
}

// SpaceToDepth (opset 1-13): the inverse of DepthToSpace DCR.
KernelResult make_space_to_depth(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) return Status::bad_input("SpaceToDepth needs blocksize >= 1");
  return make_kernel([&node, b](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() != 4) return Status::bad_input("SpaceToDepth input must be 4-D, got " + dims_to_string(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    if (H % b != 0 || W % b != 0)
      return Status::bad_input("SpaceToDepth spatial dims " + dims_to_string(x.shape()) + " are not divisible by blocksize");
    out[0] = reshape_transpose(x, {N, C, H / b, b, W / b, b}, {0, 3, 5, 1, 2, 4}, {N, C * b * b, H / b, W / b});
    return Status::ok();
  });
}

// ReverseSequence (opset 10): reverses the first sequence_lens[b] steps of
// each batch entry along time_axis; (batch_axis, time_axis) is (1, 0) or (0, 1).
KernelResult make_reverse_sequence(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t batch_axis = node.attr_int("batch_axis", 1), time_axis = node.attr_int("time_axis", 0);
  if (!((batch_axis == 1 && time_axis == 0) || (batch_axis == 0 && time_axis == 1)))
    return Status::bad_input("ReverseSequence batch_axis/time_axis must be 1/0 or 0/1");
  const bool time_major = time_axis == 0;
  return make_kernel([&node, time_major](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    if (x.rank() < 2) return Status::bad_input("ReverseSequence input must have rank >= 2");
    const int64_t time = x.dim(time_major ? 0 : 1), batch = x.dim(time_major ? 1 : 0);
    QT_ASSIGN_OR_RETURN(Dims lens, read_int_list(node, *in[1], "sequence_lens"));
    if (static_cast<int64_t>(lens.size()) != batch)
      return Status::bad_input("ReverseSequence sequence_lens has " + std::to_string(lens.size()) + " values for batch " +
                               std::to_string(batch));
    for (int64_t l : lens)
      if (l < 0 || l > time) return Status::bad_input("ReverseSequence length " + std::to_string(l) + " is out of range");
    const int64_t inner = time * batch == 0 ? 0 : x.size() / (time * batch);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    kernels::reverse_sequence(x.raw(), dtype_size(x.dtype()), time, batch, inner, time_major, lens.data(), out[0].raw());
    return Status::ok();
  });
}

}  // namespace quant::interp
