// Element-wise unary ops: math functions, activations (with their attributes
// read once here), Clip, IsNaN, IsInf and Not.
#include <limits>
#include <optional>

#include "libquant/interp/elementwise_util.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/eltwise_f32.h"
#include "libquant/kernels/sigmoid_f32.h"
#include "libquant/kernels/unary.h"

namespace quant::interp {
namespace {

using kernels::UnaryOp;
using kernels::UnaryParams;

Status run_unary(const ir::Node& node, UnaryOp op, const UnaryParams& params, TypeSet allowed, const Tensor& x,
                 Tensor& y, int threads) {
  QT_RETURN_IF_ERROR(require_type_in(node, x.dtype(), allowed, "input"));
  if (op == UnaryOp::Relu && x.dtype() == DType::Float32) {
    // Relu is the clamp to [0, +inf] (x < 0 ? 0 : x, NaN kept), vectorized.
    QT_RETURN_IF_ERROR(reuse_or_create(y, DType::Float32, x.shape()));
    kernels::clamp_f32(x.data<float>(), y.data<float>(), x.size(), 0.0f, std::numeric_limits<float>::infinity(), threads);
    return Status::ok();
  }
  if (op == UnaryOp::Sigmoid && x.dtype() == DType::Float32) {
    // ONNX Runtime's arithmetic (MLAS's logistic kernel), vectorized.
    QT_RETURN_IF_ERROR(reuse_or_create(y, DType::Float32, x.shape()));
    kernels::sigmoid_f32(x.data<float>(), y.data<float>(), x.size(), threads);
    return Status::ok();
  }
  if (is_half_type(x.dtype())) {
    Tensor wide = widen_to_float32(x);
    kernels::unary<float>(op, wide.data<float>(), wide.data<float>(), wide.size(), params);
    y = narrow_from_float32(wide, x.dtype());
    return Status::ok();
  }
  QT_RETURN_IF_ERROR(reuse_or_create(y, x.dtype(), x.shape()));
  return dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::unary<T>(op, x.data<T>(), y.data<T>(), x.size(), params);
    return Status::ok();
  });
}

KernelResult make_unary(const KernelContext& ctx, UnaryOp op, TypeSet allowed, UnaryParams params = {}) {
  const ir::Node& node = ctx.node;
  const int threads = ctx.options.threads;
  // In place (the Session may pass in[0] == &out[0]): clamp_f32 allows x == y,
  // kernels::unary maps y[i] = f(x[i]), and the half path widens x before y is assigned.
  return make_kernel(
      [&node, op, allowed, params, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) {
        QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
        return run_unary(node, op, params, allowed, *in[0], out[0], threads);
      },
      /*in_place_inputs=*/1u);
}

KernelResult make_float_unary(const KernelContext& ctx, UnaryOp op) { return make_unary(ctx, op, kFloatTypes); }

// Signed types: Neg (opset 13), Relu (opset 14).
constexpr TypeSet kSignedTypes = kFloatTypes | kSignedIntTypes;

}  // namespace

KernelResult make_abs(const KernelContext& c) { return make_unary(c, UnaryOp::Abs, kNumericTypes); }
KernelResult make_neg(const KernelContext& c) { return make_unary(c, UnaryOp::Neg, kSignedTypes); }
KernelResult make_sign(const KernelContext& c) { return make_unary(c, UnaryOp::Sign, kNumericTypes); }
KernelResult make_floor(const KernelContext& c) { return make_float_unary(c, UnaryOp::Floor); }
KernelResult make_ceil(const KernelContext& c) { return make_float_unary(c, UnaryOp::Ceil); }
KernelResult make_round(const KernelContext& c) { return make_float_unary(c, UnaryOp::Round); }
KernelResult make_sqrt(const KernelContext& c) { return make_float_unary(c, UnaryOp::Sqrt); }
KernelResult make_reciprocal(const KernelContext& c) { return make_float_unary(c, UnaryOp::Reciprocal); }
KernelResult make_exp(const KernelContext& c) { return make_float_unary(c, UnaryOp::Exp); }
KernelResult make_log(const KernelContext& c) { return make_float_unary(c, UnaryOp::Log); }
KernelResult make_tanh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Tanh); }
// Erf (opset 13) takes every numeric type.
KernelResult make_erf(const KernelContext& c) { return make_unary(c, UnaryOp::Erf, kNumericTypes); }
KernelResult make_sin(const KernelContext& c) { return make_float_unary(c, UnaryOp::Sin); }
KernelResult make_cos(const KernelContext& c) { return make_float_unary(c, UnaryOp::Cos); }
KernelResult make_tan(const KernelContext& c) { return make_float_unary(c, UnaryOp::Tan); }
KernelResult make_asin(const KernelContext& c) { return make_float_unary(c, UnaryOp::Asin); }
KernelResult make_acos(const KernelContext& c) { return make_float_unary(c, UnaryOp::Acos); }
KernelResult make_atan(const KernelContext& c) { return make_float_unary(c, UnaryOp::Atan); }
KernelResult make_sinh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Sinh); }
KernelResult make_cosh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Cosh); }
KernelResult make_asinh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Asinh); }
KernelResult make_acosh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Acosh); }
KernelResult make_atanh(const KernelContext& c) { return make_float_unary(c, UnaryOp::Atanh); }
KernelResult make_softplus(const KernelContext& c) { return make_float_unary(c, UnaryOp::Softplus); }
KernelResult make_softsign(const KernelContext& c) { return make_float_unary(c, UnaryOp::Softsign); }
KernelResult make_relu(const KernelContext& c) { return make_unary(c, UnaryOp::Relu, kSignedTypes); }
KernelResult make_sigmoid(const KernelContext& c) { return make_float_unary(c, UnaryOp::Sigmoid); }
// Mish (opset 18): x * tanh(softplus(x)).
KernelResult make_mish(const KernelContext& c) { return make_float_unary(c, UnaryOp::Mish); }

// Activations: attribute defaults as in the spec (opset 6+; LeakyRelu 16,
// HardSwish 14, Celu 12, ThresholdedRelu 10, Gelu 20).
KernelResult make_leaky_relu(const KernelContext& c) {
  return make_unary(c, UnaryOp::LeakyRelu, kFloatTypes, {c.node.attr_float("alpha", 0.01f)});
}
KernelResult make_elu(const KernelContext& c) {
  return make_unary(c, UnaryOp::Elu, kFloatTypes, {c.node.attr_float("alpha", 1.0f)});
}
KernelResult make_selu(const KernelContext& c) {
  return make_unary(c, UnaryOp::Selu, kFloatTypes,
                    {c.node.attr_float("alpha", 1.67326319217681884765625f), 0,
                     c.node.attr_float("gamma", 1.05070102214813232421875f)});
}
KernelResult make_celu(const KernelContext& c) {
  const float alpha = c.node.attr_float("alpha", 1.0f);
  if (alpha == 0.0f) return Status::bad_input("Celu alpha must not be 0");
  return make_unary(c, UnaryOp::Celu, kFloatTypes, {alpha});
}
KernelResult make_thresholded_relu(const KernelContext& c) {
  return make_unary(c, UnaryOp::ThresholdedRelu, kFloatTypes, {c.node.attr_float("alpha", 1.0f)});
}
// Shrink (opset 9): every numeric type; integers are computed in double and
// truncated back, as the other integer activations here are.
KernelResult make_shrink(const KernelContext& c) {
  return make_unary(c, UnaryOp::Shrink, kNumericTypes, {c.node.attr_float("lambd", 0.5f), c.node.attr_float("bias", 0.0f)});
}
KernelResult make_hard_sigmoid(const KernelContext& c) {
  return make_unary(c, UnaryOp::HardSigmoid, kFloatTypes,
                    {c.node.attr_float("alpha", 0.2f), c.node.attr_float("beta", 0.5f)});
}
KernelResult make_hard_swish(const KernelContext& c) { return make_float_unary(c, UnaryOp::HardSwish); }
KernelResult make_gelu(const KernelContext& c) {
  const std::string approximate = c.node.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return Status::bad_input("Gelu approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return make_float_unary(c, approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf);
}

// Clip: bounds are attributes before opset 11 (float types) and optional
// scalar inputs of the input's type from opset 11 on (all numeric types from
// opset 12). An absent bound is the type's lowest / highest value.
KernelResult make_clip(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool bounds_are_inputs = ctx.opset >= 11;
  std::optional<float> attr_lo, attr_hi;
  if (!bounds_are_inputs && node.find_attribute("min")) attr_lo = node.attr_float("min", 0);
  if (!bounds_are_inputs && node.find_attribute("max")) attr_hi = node.attr_float("max", 0);
  const TypeSet allowed = ctx.opset >= 12 ? kNumericTypes : kFloatTypes;
  const int threads = ctx.options.threads;
  // In place on input 0 (the Session may pass in[0] == &out[0]): y is out[0]
  // itself, clamp_f32 and kernels::clip read x[i] before writing y[i], and the
  // half path widens x before out[0] is assigned.
  return make_kernel([&node, bounds_are_inputs, attr_lo, attr_hi, allowed, threads](std::span<const Tensor* const> in,
                                                                                    std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x0 = *in[0];
    QT_RETURN_IF_ERROR(require_type_in(node, x0.dtype(), allowed, "input"));
    const Tensor* bounds[2] = {nullptr, nullptr};
    if (bounds_are_inputs) {
      for (size_t k = 1; k <= 2; ++k) {
        if (k >= in.size() || !in[k]) continue;
        const char* what = k == 1 ? "min" : "max";
        if (in[k]->size() != 1)
          return Status::bad_input("Clip " + std::string(what) + " must be a scalar, got shape " +
                                   dims_to_string(in[k]->shape()));
        QT_RETURN_IF_ERROR(require_dtype(node, *in[k], x0.dtype(), what));
        bounds[k - 1] = in[k];
      }
    }
    // float16/bfloat16: clip in float32 (bounds widened the same way; exact).
    const bool half = is_half_type(x0.dtype());
    const Tensor wide_x = half ? widen_to_float32(x0) : Tensor();
    const Tensor& x = half ? wide_x : x0;
    Tensor wide_y;
    Tensor& y = half ? wide_y : out[0];
    QT_RETURN_IF_ERROR(reuse_or_create(y, x.dtype(), x.shape()));
    QT_RETURN_IF_ERROR(dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (attr_lo) lo = static_cast<T>(*attr_lo);
      if (attr_hi) hi = static_cast<T>(*attr_hi);
      for (int k = 0; k < 2; ++k) {
        if (!bounds[k]) continue;
        const T v = half ? static_cast<T>(widen_to_float32(*bounds[k]).data<float>()[0]) : bounds[k]->data<T>()[0];
        (k == 0 ? lo : hi) = v;
      }
      if constexpr (std::is_same_v<T, float>)
        kernels::clamp_f32(x.data<T>(), y.data<T>(), x.size(), lo, hi, threads);  // the same selections, vectorized
      else
        kernels::clip<T>(x.data<T>(), y.data<T>(), x.size(), lo, hi);
      return Status::ok();
    }));
    if (half) out[0] = narrow_from_float32(y, x0.dtype());
    return Status::ok();
  }, /*in_place_inputs=*/1u);
}

// IsNaN (opset 9/13) and IsInf (opset 10/20): float input, bool output.
KernelResult make_isnan(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_type_in(node, in[0]->dtype(), kFloatTypes, "input"));
    const Tensor wide = is_half_type(in[0]->dtype()) ? widen_to_float32(*in[0]) : Tensor();
    const Tensor& x = wide.empty() ? *in[0] : wide;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Bool, x.shape()));
    return dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::is_nan<T>(x.data<T>(), out[0].data<uint8_t>(), x.size());
      return Status::ok();
    });
  });
}

KernelResult make_isinf(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool negative = node.attr_int("detect_negative", 1) != 0;
  const bool positive = node.attr_int("detect_positive", 1) != 0;
  return make_kernel([&node, negative, positive](std::span<const Tensor* const> in,
                                                 std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_type_in(node, in[0]->dtype(), kFloatTypes, "input"));
    const Tensor wide = is_half_type(in[0]->dtype()) ? widen_to_float32(*in[0]) : Tensor();
    const Tensor& x = wide.empty() ? *in[0] : wide;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Bool, x.shape()));
    return dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::is_inf<T>(x.data<T>(), out[0].data<uint8_t>(), x.size(), negative, positive);
      return Status::ok();
    });
  });
}

// Not (opset 1): bool only.
KernelResult make_not(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Bool, "input"));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Bool, in[0]->shape()));
    kernels::logical_not(in[0]->data<uint8_t>(), out[0].data<uint8_t>(), in[0]->size());
    return Status::ok();
  });
}

}  // namespace quant::interp
