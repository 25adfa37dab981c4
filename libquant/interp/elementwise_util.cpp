#include "libquant/interp/elementwise_util.h"

#include <optional>

namespace quant::interp {
namespace {

// The same ceiling as tensor files (io/tensor_proto.cpp): a broadcast that
// would need more is refused rather than attempted.
constexpr int64_t kMaxOutputBytes = int64_t{16} << 30;

std::string describe_shapes(std::initializer_list<const Dims*> shapes) {
  std::string s;
  for (const Dims* d : shapes) s += (s.empty() ? "" : ", ") + dims_to_string(*d);
  return s;
}

}  // namespace

std::string TypeSet::names() const {
  std::string s;
  for (int t = 0; t < 64; ++t) {
    if (!(bits_ & (uint64_t{1} << t))) continue;
    s += (s.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(t)));
  }
  return s;
}

Status require_type_in(const ir::Node& node, DType t, TypeSet allowed, const char* what) {
  if (allowed.contains(t)) return Status::ok();
  return Status::bad_input(node.op_type + " " + what + " has element type " + std::string(dtype_name(t)) +
                           ", which is not supported (allowed: " + allowed.names() + ")");
}

Status require_same_types(const ir::Node& node, std::span<const Tensor* const> inputs) {
  const Tensor* first = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    if (!first) {
      first = inputs[i];
    } else if (inputs[i]->dtype() != first->dtype()) {
      return Status::bad_input(node.op_type + " inputs must have one element type, got " +
                               std::string(dtype_name(first->dtype())) + " and " +
                               std::string(dtype_name(inputs[i]->dtype())) + " (input " + std::to_string(i) + ")");
    }
  }
  return Status::ok();
}

Expected<Dims> broadcast_output_shape(const ir::Node& node, std::initializer_list<const Dims*> shapes) {
  std::optional<Dims> out = Dims{};
  for (const Dims* d : shapes) {
    out = kernels::broadcast_shapes(*out, *d);
    if (!out) return Status::bad_input(node.op_type + " input shapes " + describe_shapes(shapes) + " do not broadcast");
  }
  // Every output dimension is some input's, but their product may not be.
  int64_t count = 1;
  for (int64_t d : *out) {
    if (d != 0 && count > kMaxOutputBytes / 8 / d)
      return Status::bad_input(node.op_type + " broadcast output " + dims_to_string(*out) + " is too large");
    count *= d;
  }
  return *std::move(out);
}

Expected<Dims> broadcast_output_shape(const ir::Node& node, std::span<const Tensor* const> inputs) {
  // Fold pairwise: the result does not depend on the order (numpy rules).
  Dims out;
  for (const Tensor* t : inputs) {
    if (!t) continue;
    QT_ASSIGN_OR_RETURN(out, broadcast_output_shape(node, {&out, &t->shape()}));
  }
  return out;
}

LegacyBroadcast parse_legacy_broadcast(const KernelContext& ctx) {
  LegacyBroadcast l;
  l.active = ctx.opset < 7;
  if (!l.active) return l;
  l.broadcast = ctx.node.attr_int("broadcast", 0) != 0;
  l.has_axis = ctx.node.find_attribute("axis") != nullptr;
  l.axis = ctx.node.attr_int("axis", 0);
  return l;
}

Expected<Dims> legacy_b_shape(const ir::Node& node, const LegacyBroadcast& legacy, const Dims& a, const Dims& b) {
  if (!legacy.active) return b;
  auto refuse = [&](const std::string& why) {
    return Status::bad_input(node.op_type + " (opset < 7) input B " + dims_to_string(b) + " does not broadcast to A " +
                             dims_to_string(a) + ": " + why);
  };
  if (!legacy.broadcast) {
    if (a != b) return refuse("shapes must be equal without broadcast=1");
    return b;
  }
  const auto rank_a = static_cast<int64_t>(a.size()), rank_b = static_cast<int64_t>(b.size());
  int64_t axis = legacy.has_axis ? legacy.axis : rank_a - rank_b;
  if (axis < 0) axis += rank_a;
  if (axis < 0 || axis + rank_b > rank_a) return refuse("axis " + std::to_string(legacy.axis) + " is out of range");
  Dims shape = b;
  shape.resize(static_cast<size_t>(rank_a - axis), 1);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && shape[i] != a[static_cast<size_t>(axis) + i]) return refuse("dims differ");
  return shape;
}

Tensor widen_to_float32(const Tensor& x) {
  Tensor y(DType::Float32, x.shape());
  if (x.dtype() == DType::Float16)
    kernels::cast_array<kernels::Float16Tag, float>(x.data<uint16_t>(), y.data<float>(), x.size());
  else
    kernels::cast_array<kernels::BFloat16Tag, float>(x.data<uint16_t>(), y.data<float>(), x.size());
  return y;
}

Tensor narrow_from_float32(const Tensor& x, DType to) {
  Tensor y(to, x.shape());
  if (to == DType::Float16)
    kernels::cast_array<float, kernels::Float16Tag>(x.data<float>(), y.data<uint16_t>(), x.size());
  else
    kernels::cast_array<float, kernels::BFloat16Tag>(x.data<float>(), y.data<uint16_t>(), x.size());
  return y;
}

}  // namespace quant::interp
