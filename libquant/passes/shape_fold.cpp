#include "libquant/passes/shape_fold.h"

#include <numeric>
#include <set>

#include "libquant/kernels/layout.h"

namespace quant::passes {

std::optional<int64_t> axis_after_transpose(int64_t axis, std::span<const int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] == axis) return static_cast<int64_t>(i);
  return std::nullopt;
}

std::optional<int64_t> axis_after_reshape(std::span<const int64_t> in, std::span<const int64_t> out, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(in.size())) return std::nullopt;
  int64_t before = 1;
  for (int64_t d = 0; d < axis; ++d) before *= in[static_cast<size_t>(d)];
  const int64_t channels = in[static_cast<size_t>(axis)];
  int64_t prefix = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    // Same size and the same number of elements before it: the dimension
    // survived whole (unit dims around it do not matter).
    if (prefix == before && out[d] == channels) return static_cast<int64_t>(d);
    prefix *= out[d];
    if (prefix > before && before != 0) break;
  }
  return std::nullopt;
}

bool is_foldable_shape_op(const ir::Node& n) {
  static const std::set<std::string> kOps = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  return n.domain.empty() && kOps.count(n.op_type) > 0;
}

namespace {

// Axes of Squeeze/Unsqueeze: attribute before opset 13, input from 13.
std::optional<Dims> axes_of(const ir::Node& op) {
  if (const ir::Attribute* a = op.find_attribute("axes")) return a->ints;
  if (op.inputs.size() > 1 && op.inputs[1]) {
    const Tensor* t = ir::constant_data(op.inputs[1]);
    if (!t || t->dtype() != DType::Int64) return std::nullopt;
    auto v = t->values<int64_t>();
    return Dims(v.begin(), v.end());
  }
  return Dims{};
}

// Output shape of a foldable shape op on a static input shape.
Expected<Dims> output_shape(const ir::Node& op, const Dims& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (op.op_type == "Transpose") {
    Dims perm = op.attr_ints("perm");
    if (perm.empty()) {
      perm.resize(in.size());
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (static_cast<int64_t>(perm.size()) != rank) return Status::bad_input(op.describe() + ": perm does not match the weight rank");
    Dims out;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) return Status::bad_input(op.describe() + ": perm out of range");
      out.push_back(in[static_cast<size_t>(p)]);
    }
    return out;
  }
  if (op.op_type == "Reshape") {
    const Tensor* s = ir::constant_data(op.input(1));
    if (!s || s->dtype() != DType::Int64) return Status::bad_input(op.describe() + ": shape is not a constant int64 tensor");
    Dims out(s->values<int64_t>().begin(), s->values<int64_t>().end());
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0 && op.attr_int("allowzero", 0) == 0 && static_cast<int64_t>(i) < rank) out[i] = in[i];
      if (out[i] == -1) infer = static_cast<int64_t>(i);
      else known *= out[i];
    }
    if (infer >= 0 && known > 0) out[static_cast<size_t>(infer)] = element_count(in) / known;
    if (element_count(out) != element_count(in)) return Status::bad_input(op.describe() + ": shape does not fit the weight");
    return out;
  }
  if (op.op_type == "Flatten") {
    int64_t axis = op.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return Status::bad_input(op.describe() + ": axis out of range");
    int64_t a = 1, b = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= in[static_cast<size_t>(d)];
    return Dims{a, b};
  }
  auto axes = axes_of(op);
  if (!axes) return Status::bad_input(op.describe() + ": axes are not constant");
  if (op.op_type == "Squeeze") {
    std::set<int64_t> drop;
    for (int64_t a : *axes) drop.insert(a < 0 ? a + rank : a);
    Dims out;
    for (int64_t d = 0; d < rank; ++d) {
      const bool squeeze = axes->empty() ? in[static_cast<size_t>(d)] == 1 : drop.count(d) > 0;
      if (!squeeze) out.push_back(in[static_cast<size_t>(d)]);
    }
    return out;
  }
  // Unsqueeze: axes index the output.
  const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
  std::set<int64_t> add;
  for (int64_t a : *axes) add.insert(a < 0 ? a + out_rank : a);
  Dims out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(add.count(d) ? 1 : in[next++]);
  return out;
}

}  // namespace

Status apply_shape_op(const ir::Node& op, Tensor& data, std::optional<int64_t>& axis) {
  QT_ASSIGN_OR_RETURN(Dims out, output_shape(op, data.shape()));
  if (op.op_type == "Transpose") {
    Dims perm(out.size());
    const Dims attr = op.attr_ints("perm");
    if (attr.empty()) std::iota(perm.rbegin(), perm.rend(), 0);
    else perm = attr;
    Tensor moved(data.dtype(), out);
    kernels::transpose(data.raw(), dtype_size(data.dtype()), data.shape(), perm, moved.raw());
    if (axis) axis = axis_after_transpose(*axis, perm);
    data = std::move(moved);
    return Status::ok();
  }
  if (axis) {
    auto moved = axis_after_reshape(data.shape(), out, *axis);
    if (!moved) {
      return Status::bad_input(op.describe() + " merges or splits the channel dimension " + std::to_string(*axis) + " of " +
                               dims_to_string(data.shape()) + " -> " + dims_to_string(out));
    }
    axis = moved;
  }
  data.reshape(out);
  return Status::ok();
}

WeightPath trace_weight_path(const ir::Graph& graph, ir::Value* input) {
  WeightPath path;
  ir::Value* v = input;
  while (v && !v->is_constant()) {
    ir::Node* p = v->producer;
    if (!p || !is_foldable_shape_op(*p) || p->outputs.size() != 1) return {};
    path.chain.insert(path.chain.begin(), p);
    v = p->input(0);
    if (v && graph.consumers(v).size() != 1) return {};  // shared: folding would change other users
  }
  if (!v || v->constant->dtype() != DType::Float32) return {};
  path.source = v;
  return path;
}

std::optional<int64_t> source_axis(const WeightPath& path, int64_t consumer_axis, std::string& why) {
  std::vector<Dims> shapes{path.source->constant->shape()};
  for (ir::Node* op : path.chain) {
    auto out = output_shape(*op, shapes.back());
    if (!out) {
      why = out.status().message();
      return std::nullopt;
    }
    shapes.push_back(*out);
  }
  int64_t axis = consumer_axis;
  for (size_t i = path.chain.size(); i-- > 0;) {
    const ir::Node& op = *path.chain[i];
    std::optional<int64_t> back;
    if (op.op_type == "Transpose") {
      Dims perm = op.attr_ints("perm");
      if (perm.empty()) {
        perm.resize(shapes[i].size());
        std::iota(perm.rbegin(), perm.rend(), 0);
      }
      if (axis >= 0 && axis < static_cast<int64_t>(perm.size())) back = perm[static_cast<size_t>(axis)];
    } else {
      back = axis_after_reshape(shapes[i + 1], shapes[i], axis);
    }
    if (!back) {
      why = op.describe() + " merges or splits the channel dimension (" + dims_to_string(shapes[i]) + " -> " +
            dims_to_string(shapes[i + 1]) + ")";
      return std::nullopt;
    }
    axis = *back;
  }
  return axis;
}

}  // namespace quant::passes
