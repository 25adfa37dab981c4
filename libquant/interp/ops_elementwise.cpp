// Broadcasting arithmetic: Add, Sub, Mul, Div (opset 7/13/14), Mod (10/13),
// Pow (7/12/13/15), BitShift (11), PRelu (9/16), and the variadic Min, Max,
// Sum, Mean (8/12/13). Add, Sub, Mul, Div and Pow also follow the opset < 7
// broadcast/axis attributes.
#include <algorithm>
#include <string_view>

#include "libquant/interp/elementwise_util.h"
#include "libquant/interp/fusion.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/broadcast.h"
#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/eltwise_f32.h"

namespace quant::interp {
namespace {

using kernels::BinaryOp;

// y = a OP b for same-typed inputs of a type in `allowed`; b is read as
// having shape b_shape (b's own, or its legacy-broadcast alignment).
Status run_binary(const ir::Node& node, BinaryOp op, TypeSet allowed, const Tensor& a, const Tensor& b,
                  const Dims& b_shape, Tensor& y, int threads = 1) {
  const Tensor* ins[] = {&a, &b};
  QT_RETURN_IF_ERROR(require_same_types(node, ins));
  QT_RETURN_IF_ERROR(require_type_in(node, a.dtype(), allowed, "input"));
  QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&a.shape(), &b_shape}));
  if (is_half_type(a.dtype())) {
    Tensor wide;
    QT_RETURN_IF_ERROR(run_binary(node, op, allowed, widen_to_float32(a), widen_to_float32(b), b_shape, wide, threads));
    y = narrow_from_float32(wide, a.dtype());
    return Status::ok();
  }
  // Float32 Add, Sub, Mul and Div: the vector kernels over broadcast runs,
  // on the threads (the broadcasting kernel's bits). a's shape is copied
  // first: y may be a itself, reshaped by reuse_or_create.
  if (a.dtype() == DType::Float32 && (op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div)) {
    const Dims a_shape = a.shape();
    QT_RETURN_IF_ERROR(reuse_or_create(y, DType::Float32, std::move(shape)));
    kernels::binary_f32(op, a.data<float>(), a_shape, b.data<float>(), b_shape, y.data<float>(), y.shape(), threads);
    return Status::ok();
  }
  QT_RETURN_IF_ERROR(reuse_or_create(y, a.dtype(), std::move(shape)));
  return dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::binary_broadcast<T>(op, a.data<T>(), a.shape(), b.data<T>(), b_shape, y.data<T>(), y.shape());
    return Status::ok();
  });
}

// `act` (a fused Relu/Clip, Add only) clamps the result: float32 operands of
// one shape in one pass (the residual Add of CNNs), otherwise after the op.
KernelResult make_binary(const KernelContext& ctx, BinaryOp op, TypeSet allowed, const kernels::ConvActivation& act = {}) {
  const ir::Node& node = ctx.node;
  const LegacyBroadcast legacy = parse_legacy_broadcast(ctx);
  const int threads = ctx.options.threads;
  // In place on either input (the Session may pass in[k] == &out[0] when that
  // input has the output's element count, hence its shape up to leading 1s):
  // add_f32 allows y == a or y == b, broadcast_binary allows y to alias an
  // input of y's shape, b_shape is a copy taken before out[0] is resized, and
  // the half path widens both inputs before assigning y.
  return make_kernel([&node, op, allowed, legacy, act, threads](std::span<const Tensor* const> in,
                                                                std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (op == BinaryOp::Add && a.dtype() == DType::Float32 && b.dtype() == DType::Float32 && a.shape() == b.shape()) {
      QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, a.shape()));
      kernels::add_f32(a.data<float>(), b.data<float>(), out[0].data<float>(), a.size(), act.clamp, act.lo, act.hi,
                       threads);
      return Status::ok();
    }
    QT_ASSIGN_OR_RETURN(Dims b_shape, legacy_b_shape(node, legacy, a.shape(), b.shape()));
    QT_RETURN_IF_ERROR(run_binary(node, op, allowed, a, b, b_shape, out[0], threads));
    if (act.clamp) {
      // Fusion only takes float32 activations (Session), so a float32 Add.
      if (out[0].dtype() != DType::Float32) return Status::internal("fused clamp on a non-float32 Add");
      kernels::clamp_f32(out[0].data<float>(), out[0].data<float>(), out[0].size(), act.lo, act.hi, threads);
    }
    return Status::ok();
  }, /*in_place_inputs=*/0b11u);
}

// Min, Max, Sum, Mean: one or more inputs, all broadcast together. Computed
// as a left fold of the binary op into the output, as ONNX Runtime does.
KernelResult make_variadic(const KernelContext& ctx, BinaryOp op, bool mean, TypeSet allowed) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node, op, mean, allowed](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    if (in.empty()) return Status::bad_input(node.op_type + " needs at least one input");
    QT_RETURN_IF_ERROR(require_inputs(node, in, in.size()));
    QT_RETURN_IF_ERROR(require_same_types(node, in));
    const DType type = in[0]->dtype();
    QT_RETURN_IF_ERROR(require_type_in(node, type, allowed, "input"));
    QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, in));
    if (is_half_type(type)) {
      std::vector<Tensor> wide;
      for (const Tensor* t : in) wide.push_back(widen_to_float32(*t));
      QT_ASSIGN_OR_RETURN(Tensor y, Tensor::create(DType::Float32, shape));
      for (size_t k = 0; k < wide.size(); ++k) {
        if (k == 0)
          kernels::broadcast_copy(wide[0].raw(), wide[0].shape(), y.raw(), shape, sizeof(float));
        else
          kernels::binary_broadcast<float>(op, y.data<float>(), shape, wide[k].data<float>(), wide[k].shape(),
                                           y.data<float>(), shape);
      }
      if (mean) {
        const float n = static_cast<float>(wide.size());
        kernels::binary_broadcast<float>(BinaryOp::Div, y.data<float>(), shape, &n, {}, y.data<float>(), shape);
      }
      out[0] = narrow_from_float32(y, type);
      return Status::ok();
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(type, shape));
    Tensor& y = out[0];
    return dispatch_numeric(type, [&](auto tag) {
      using T = decltype(tag);
      kernels::broadcast_copy(in[0]->raw(), in[0]->shape(), y.raw(), shape, sizeof(T));
      for (size_t k = 1; k < in.size(); ++k)
        kernels::binary_broadcast<T>(op, y.data<T>(), shape, in[k]->data<T>(), in[k]->shape(), y.data<T>(), shape);
      if (mean) {
        // Mean is float-only (T: float16, float, double, bfloat16).
        const T n = static_cast<T>(in.size());
        kernels::binary_broadcast<T>(BinaryOp::Div, y.data<T>(), shape, &n, {}, y.data<T>(), shape);
      }
      return Status::ok();
    });
  });
}

}  // namespace

// Add/Sub/Mul/Div: all numeric types from opset 14 (a subset before; the
// kernels accept them all).
KernelResult make_add(const KernelContext& c) { return make_binary(c, BinaryOp::Add, kNumericTypes); }
KernelResult make_add_fused(const KernelContext& c, const kernels::ConvActivation& act) {
  return make_binary(c, BinaryOp::Add, kNumericTypes, act);
}
KernelResult make_sub(const KernelContext& c) { return make_binary(c, BinaryOp::Sub, kNumericTypes); }
KernelResult make_mul(const KernelContext& c) { return make_binary(c, BinaryOp::Mul, kNumericTypes); }
KernelResult make_div(const KernelContext& c) { return make_binary(c, BinaryOp::Div, kNumericTypes); }

// Mod (opset 13): fmod=0 gives the integer remainder with the divisor's sign;
// float inputs require fmod=1 (the spec's rule; ONNX Runtime refuses them too).
KernelResult make_mod(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t fmod = node.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return Status::bad_input("Mod fmod must be 0 or 1, got " + std::to_string(fmod));
  return make_kernel([&node, fmod](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    if (fmod == 0 && is_float(in[0]->dtype()))
      return Status::bad_input("Mod on " + std::string(dtype_name(in[0]->dtype())) + " needs fmod=1");
    return run_binary(node, fmod ? BinaryOp::FMod : BinaryOp::Mod, kNumericTypes, *in[0], *in[1], in[1]->shape(),
                      out[0]);
  });
}

// BitShift (opset 11): unsigned integers, direction "LEFT" or "RIGHT" (required).
KernelResult make_bitshift(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const std::string direction = node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return Status::bad_input("BitShift direction must be LEFT or RIGHT, got '" + direction + "'");
  const BinaryOp op = direction == "LEFT" ? BinaryOp::BitShiftLeft : BinaryOp::BitShiftRight;
  return make_kernel([&node, op](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    return run_binary(node, op, kUnsignedIntTypes, *in[0], *in[1], in[1]->shape(), out[0]);
  });
}

// PRelu (opset 9/16): the slope broadcasts unidirectionally to X, so the
// output has X's shape. Before opset 7 a slope of X's channel count applies
// along axis 1 (the opset 6 spec: shared across channels only when of size 1;
// PyTorch exports per-channel slopes as [C]).
KernelResult make_prelu(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool channel_slope = ctx.opset < 7;
  static constexpr TypeSet kPReluTypes =
      kFloatTypes | TypeSet{DType::Int32, DType::Int64, DType::UInt32, DType::UInt64};
  return make_kernel([&node, channel_slope](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& slope = *in[1];
    Dims slope_shape = slope.shape();
    if (channel_slope && slope.rank() == 1 && slope.size() != 1 && x.rank() >= 2 && slope.dim(0) == x.dim(1)) {
      slope_shape.resize(static_cast<size_t>(x.rank() - 1), 1);  // [C] -> [C,1,...,1]
    }
    auto shape = kernels::broadcast_shapes(x.shape(), slope_shape);
    if (!shape || *shape != x.shape())
      return Status::bad_input("PRelu slope " + dims_to_string(slope.shape()) + " does not broadcast to X " +
                               dims_to_string(x.shape()));
    return run_binary(node, BinaryOp::PRelu, kPReluTypes, x, slope, slope_shape, out[0]);
  });
}

// Pow (opset 15): base float16/float/double/bfloat16/int32/int64, exponent any
// numeric type; the output has the base's type. Before opset 12 both had
// one float type, which is a special case.
KernelResult make_pow(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const LegacyBroadcast legacy = parse_legacy_broadcast(ctx);
  static constexpr TypeSet kBaseTypes = kFloatTypes | TypeSet{DType::Int32, DType::Int64};
  return make_kernel([&node, legacy](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    QT_RETURN_IF_ERROR(require_type_in(node, in[0]->dtype(), kBaseTypes, "base"));
    QT_RETURN_IF_ERROR(require_type_in(node, in[1]->dtype(), kNumericTypes, "exponent"));
    QT_ASSIGN_OR_RETURN(Dims e_shape, legacy_b_shape(node, legacy, in[0]->shape(), in[1]->shape()));
    QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&in[0]->shape(), &e_shape}));
    const Tensor base = is_half_type(in[0]->dtype()) ? widen_to_float32(*in[0]) : Tensor();
    const Tensor expo = is_half_type(in[1]->dtype()) ? widen_to_float32(*in[1]) : Tensor();
    const Tensor& b = base.empty() ? *in[0] : base;
    const Tensor& e = expo.empty() ? *in[1] : expo;
    QT_ASSIGN_OR_RETURN(Tensor y, Tensor::create(b.dtype(), std::move(shape)));
    QT_RETURN_IF_ERROR(dispatch_numeric(b.dtype(), [&](auto base_tag) {
      using TB = decltype(base_tag);
      if constexpr (std::is_same_v<TB, float> || std::is_same_v<TB, double> || std::is_same_v<TB, int32_t> ||
                    std::is_same_v<TB, int64_t>) {
        return dispatch_numeric(e.dtype(), [&](auto exp_tag) {
          using TE = decltype(exp_tag);
          kernels::pow_broadcast<TB, TE>(b.data<TB>(), b.shape(), e.data<TE>(), e_shape, y.data<TB>(), y.shape());
          return Status::ok();
        });
      } else {
        return Status::internal("Pow base type escaped its check");
      }
    }));
    out[0] = is_half_type(in[0]->dtype()) ? narrow_from_float32(y, in[0]->dtype()) : std::move(y);
    return Status::ok();
  });
}

// Min/Max: all numeric types from opset 12 (float types before). NaN propagates.
KernelResult make_min(const KernelContext& c) { return make_variadic(c, BinaryOp::Min, false, kNumericTypes); }
KernelResult make_max(const KernelContext& c) { return make_variadic(c, BinaryOp::Max, false, kNumericTypes); }
// Sum/Mean: float types only (opset 13).
KernelResult make_sum(const KernelContext& c) { return make_variadic(c, BinaryOp::Add, false, kFloatTypes); }
KernelResult make_mean(const KernelContext& c) { return make_variadic(c, BinaryOp::Add, true, kFloatTypes); }

}  // namespace quant::interp
