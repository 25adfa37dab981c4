#include "libquant/target/qdq_params.h"

#include <cmath>
#include <cstdio>

namespace quant::target {
namespace {

bool qdq_domain(const ir::Node* n) { return n->domain.empty() || n->domain == "ai.onnx" || n->domain == "com.microsoft"; }

int64_t rank_of(const ir::Value* v) {
  if (const Tensor* t = v ? ir::constant_data(v) : nullptr) return t->rank();
  return v && v->has_shape ? static_cast<int64_t>(v->shape.size()) : -1;
}

}  // namespace

bool is_quantize(const ir::Node* n) { return n && n->op_type == "QuantizeLinear" && qdq_domain(n); }
bool is_dequantize(const ir::Node* n) { return n && n->op_type == "DequantizeLinear" && qdq_domain(n); }

StatedParams read_params(const ir::Value* scale, const ir::Value* zero_point, DType type, int64_t axis, int64_t rank) {
  StatedParams p;
  const Tensor* s = scale ? ir::constant_data(scale) : nullptr;
  const Tensor* z = zero_point ? ir::constant_data(zero_point) : nullptr;
  // Float16/bfloat16 scales (opset 19+) are not read: Tensor has no
  // arithmetic on them; the caller notes the tensor as not checked.
  if (!s || (s->dtype() != DType::Float32 && s->dtype() != DType::Float64) || s->size() == 0) return p;
  if (zero_point && !z) return p;  // a zero point computed at run time
  p.known = true;
  p.type = z ? z->dtype() : type;
  for (int64_t i = 0; i < s->size(); ++i) p.scale.push_back(static_cast<double>(static_cast<float>(s->as_double(i))));
  for (int64_t i = 0; i < s->size(); ++i)
    p.zero_point.push_back(!z || z->size() == 0 ? 0 : z->as_int64(z->size() == s->size() ? i : 0));
  p.axis = axis < 0 && rank > 0 ? axis + rank : axis;
  return p;
}

StatedParams quantize_params(const ir::Node& q) {
  DType type = DType::UInt8;
  if (const int64_t out = q.attr_int("output_dtype", 0); out != 0 && dtype_from_onnx(static_cast<int>(out))) {
    type = *dtype_from_onnx(static_cast<int>(out));
  } else if (!q.outputs.empty() && q.outputs[0] && q.outputs[0]->dtype != DType::Undefined) {
    type = q.outputs[0]->dtype;
  }
  return read_params(q.input(1), q.input(2), type, q.attr_int("axis", 1), rank_of(q.input(0)));
}

StatedParams dequantize_params(const ir::Node& dq) {
  const ir::Value* x = dq.input(0);
  DType type = DType::Undefined;
  if (const Tensor* t = x ? ir::constant_data(x) : nullptr) type = t->dtype();
  else if (x && x->dtype != DType::Undefined) type = x->dtype;
  else if (x && is_quantize(x->producer)) type = quantize_params(*x->producer).type;
  StatedParams p = read_params(dq.input(1), dq.input(2), type, dq.attr_int("axis", 1), rank_of(x));
  // The input's type wins over a zero point's (they must agree; when they
  // do not, the model is malformed and its data type is what runs).
  if (p.known && type != DType::Undefined) p.type = type;
  return p;
}

bool close_scale(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)); }

bool same_params(const StatedParams& a, const StatedParams& b) {
  if (a.type != b.type || a.scale.size() != b.scale.size() || a.zero_point != b.zero_point) return false;
  for (size_t i = 0; i < a.scale.size(); ++i)
    if (!close_scale(a.scale[i], b.scale[i])) return false;
  return true;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string describe_params(const StatedParams& p) {
  std::string out(dtype_name(p.type));
  if (p.per_tensor()) return out + " scale " + number(p.scale[0]) + " zero point " + std::to_string(p.zero_point[0]);
  out += " per-axis " + std::to_string(p.axis) + " (" + std::to_string(p.scale.size()) + " scales)";
  bool one_zero_point = true;
  for (int64_t z : p.zero_point) one_zero_point &= z == p.zero_point[0];
  return one_zero_point ? out + " zero point " + std::to_string(p.zero_point[0]) : out + " zero points vary";
}

}  // namespace quant::target
