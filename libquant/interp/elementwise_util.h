// Helpers shared by the element-wise op files (ops_elementwise.cpp,
// ops_unary.cpp, ops_logic.cpp, ops_cast.cpp): element type sets checked
// against the spec, broadcast output shapes with a size limit, and float16 /
// bfloat16 handled by computing in float32.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/cast.h"

namespace quant::interp {

// A set of element types, one bit per ONNX type number.
class TypeSet {
 public:
  constexpr TypeSet(std::initializer_list<DType> types) {
    for (DType t : types) bits_ |= bit(t);
  }
  constexpr TypeSet operator|(TypeSet o) const {
    TypeSet s{};
    s.bits_ = bits_ | o.bits_;
    return s;
  }
  constexpr bool contains(DType t) const { return (bits_ & bit(t)) != 0; }
  std::string names() const;

 private:
  static constexpr uint64_t bit(DType t) { return uint64_t{1} << static_cast<int>(t); }
  uint64_t bits_ = 0;
};

inline constexpr TypeSet kFloatTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};
inline constexpr TypeSet kSignedIntTypes{DType::Int8, DType::Int16, DType::Int32, DType::Int64};
inline constexpr TypeSet kUnsignedIntTypes{DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
inline constexpr TypeSet kNumericTypes = kFloatTypes | kSignedIntTypes | kUnsignedIntTypes;

// bad_input naming the op and the type when `t` is not in `allowed`.
Status require_type_in(const ir::Node& node, DType t, TypeSet allowed, const char* what);

// bad_input unless every present input has the type of the first.
Status require_same_types(const ir::Node& node, std::span<const Tensor* const> inputs);

// The multidirectional broadcast of the given shapes, refusing incompatible
// shapes and outputs beyond the interpreter's tensor size limit.
Expected<Dims> broadcast_output_shape(const ir::Node& node, std::initializer_list<const Dims*> shapes);
Expected<Dims> broadcast_output_shape(const ir::Node& node, std::span<const Tensor* const> inputs);

// Broadcasting before opset 7 (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal,
// Less, Greater at opset 1-6): B broadcasts to A only when broadcast=1, its
// dims aligned with A's starting at `axis` (default: A's trailing dims);
// otherwise the shapes must be equal. From opset 7 on numpy rules apply and
// this is inactive.
struct LegacyBroadcast {
  bool active = false;    // opset < 7
  bool broadcast = false; // broadcast=1
  bool has_axis = false;
  int64_t axis = 0;
};
LegacyBroadcast parse_legacy_broadcast(const KernelContext& ctx);
// B's shape to broadcast with (numpy rules) against A under `legacy`: b itself
// when inactive, else b padded with trailing 1s so that it lines up at the
// axis; bad_input when B cannot broadcast to A the legacy way.
Expected<Dims> legacy_b_shape(const ir::Node& node, const LegacyBroadcast& legacy, const Dims& a, const Dims& b);

// float16 and bfloat16 have no arithmetic here: their ops widen the inputs
// to float32, compute, and round the result back (what ONNX Runtime's CPU
// kernels do for MLFloat16 as well).
constexpr bool is_half_type(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
Tensor widen_to_float32(const Tensor& x);
Tensor narrow_from_float32(const Tensor& x, DType to);

// Calls f with a value of the kernels' tag for every element type Cast
// handles: the C++ type for numbers, kernels::Float16Tag / BFloat16Tag /
// BoolTag for the types stored as other integers.
template <class F>
Status dispatch_cast_type(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(kernels::BoolTag{});
    case DType::Float16: return f(kernels::Float16Tag{});
    case DType::BFloat16: return f(kernels::BFloat16Tag{});
    default: return dispatch_numeric(t, f);
  }
}

}  // namespace quant::interp
