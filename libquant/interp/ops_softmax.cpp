// Softmax, LogSoftmax, Hardmax, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
#include <string>
#include <type_traits>
#include <vector>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/loss.h"
#include "libquant/kernels/softmax.h"

namespace quant::interp {
namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalizes
// each row; opset 13 normalizes along the single `axis` (default -1). The same
// rule holds for Softmax, LogSoftmax and Hardmax.
KernelResult make_softmax_family(const KernelContext& ctx, SoftmaxKind kind) {
  const ir::Node& node = ctx.node;
  const bool single_axis = ctx.opset >= 13;
  const int64_t axis_attr = node.attr_int("axis", single_axis ? -1 : 1);
  const int threads = ctx.options.threads;
  return make_kernel([&node, single_axis, axis_attr, kind, threads](std::span<const Tensor* const> in,
                                                          std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      else if (d == axis || !single_axis) len *= x.dim(d);
      else inner *= x.dim(d);
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    // An empty slice or an empty tensor: nothing to normalize.
    if (x.size() == 0) return dispatch_float(x.dtype(), [](auto) { return Status::ok(); });
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      T* yp = out[0].data<T>();
      constexpr bool f32 = std::is_same_v<T, float>;
      switch (kind) {
        case SoftmaxKind::Softmax:
          if constexpr (f32) kernels::softmax_f32(xp, outer, len, inner, yp, threads);
          else kernels::softmax<T>(xp, outer, len, inner, yp);
          break;
        case SoftmaxKind::LogSoftmax:
          if constexpr (f32) kernels::log_softmax_f32(xp, outer, len, inner, yp, threads);
          else kernels::log_softmax<T>(xp, outer, len, inner, yp);
          break;
        case SoftmaxKind::Hardmax: kernels::hardmax<T>(xp, outer, len, inner, yp); break;
      }
      return Status::ok();
    });
  });
}

struct LossAttrs {
  kernels::LossReduction reduction;
  bool has_ignore_index;
  int64_t ignore_index;
};

Expected<LossAttrs> parse_loss_attrs(const ir::Node& node) {
  LossAttrs a;
  const std::string r = node.attr_string("reduction", "mean");
  if (r == "none") a.reduction = kernels::LossReduction::None;
  else if (r == "sum") a.reduction = kernels::LossReduction::Sum;
  else if (r == "mean") a.reduction = kernels::LossReduction::Mean;
  else return Status::bad_input(node.op_type + " reduction must be none, sum or mean, got '" + r + "'");
  a.has_ignore_index = node.find_attribute("ignore_index") != nullptr;
  a.ignore_index = node.attr_int("ignore_index", 0);
  return a;
}

// Shared by both losses: `log_prob` [N, C, d...] holds log-probabilities.
Status run_nll(const ir::Node& node, const LossAttrs& a, const Tensor& log_prob, const Tensor& target,
               const Tensor* weight, Tensor& loss) {
  if (log_prob.rank() < 2) return Status::bad_input(node.op_type + " input must have rank >= 2, got " + dims_to_string(log_prob.shape()));
  const int64_t N = log_prob.dim(0), C = log_prob.dim(1);
  Dims target_shape{N};
  target_shape.insert(target_shape.end(), log_prob.shape().begin() + 2, log_prob.shape().end());
  if (target.shape() != target_shape)
    return Status::bad_input(node.op_type + " target " + dims_to_string(target.shape()) + " must have shape " +
                             dims_to_string(target_shape) + " for input " + dims_to_string(log_prob.shape()));
  if (target.dtype() != DType::Int64 && target.dtype() != DType::Int32)
    return Status::bad_input(node.op_type + " target must be int32 or int64, got " + std::string(dtype_name(target.dtype())));
  if (weight && (weight->dtype() != log_prob.dtype() || weight->rank() != 1 || weight->dim(0) != C))
    return Status::bad_input(node.op_type + " weight must be a 1-D tensor of " + std::to_string(C) + " " +
                             std::string(dtype_name(log_prob.dtype())) + " values");
  const int64_t D = N * C == 0 ? 0 : log_prob.size() / (N * C);
  std::vector<int64_t> t(static_cast<size_t>(target.size()));
  for (int64_t i = 0; i < target.size(); ++i) t[static_cast<size_t>(i)] = target.as_int64(i);
  QT_ASSIGN_OR_RETURN(loss, Tensor::create(log_prob.dtype(), a.reduction == kernels::LossReduction::None ? target_shape : Dims{}));
  return dispatch_float(log_prob.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const int64_t bad = kernels::nll_loss<T>(log_prob.data<T>(), t.data(), weight ? weight->data<T>() : nullptr, N, C, D,
                                             a.has_ignore_index, a.ignore_index, a.reduction, loss.data<T>());
    if (bad >= 0)
      return Status::bad_input(node.op_type + " target[" + std::to_string(bad) + "] = " + std::to_string(t[static_cast<size_t>(bad)]) +
                               " is not a class index in [0, " + std::to_string(C) + ")");
    return Status::ok();
  });
}

}  // namespace

KernelResult make_softmax(const KernelContext& c) { return make_softmax_family(c, SoftmaxKind::Softmax); }
KernelResult make_log_softmax(const KernelContext& c) { return make_softmax_family(c, SoftmaxKind::LogSoftmax); }
KernelResult make_hardmax(const KernelContext& c) { return make_softmax_family(c, SoftmaxKind::Hardmax); }

// NegativeLogLikelihoodLoss-13: inputs input [N,C,d...], target [N,d...], optional weight [C].
KernelResult make_nll_loss(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(LossAttrs a, parse_loss_attrs(node));
  return make_kernel([&node, a](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    return run_nll(node, a, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, out[0]);
  });
}

// SoftmaxCrossEntropyLoss-13: NLL over log_softmax(scores) along axis 1; the
// optional second output is that log_softmax.
KernelResult make_softmax_cross_entropy_loss(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(LossAttrs a, parse_loss_attrs(node));
  return make_kernel([&node, a](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& scores = *in[0];
    if (scores.rank() < 2) return Status::bad_input("SoftmaxCrossEntropyLoss scores must have rank >= 2, got " + dims_to_string(scores.shape()));
    const int64_t N = scores.dim(0), C = scores.dim(1);
    const int64_t D = N * C == 0 ? 0 : scores.size() / (N * C);
    QT_ASSIGN_OR_RETURN(Tensor log_prob, Tensor::create(scores.dtype(), scores.shape()));
    QT_RETURN_IF_ERROR(dispatch_float(scores.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      if (scores.size() > 0) kernels::log_softmax<T>(scores.data<T>(), N, C, D, log_prob.data<T>());
      return Status::ok();
    }));
    QT_RETURN_IF_ERROR(run_nll(node, a, log_prob, *in[1], in.size() > 2 ? in[2] : nullptr, out[0]));
    if (out.size() > 1) out[1] = std::move(log_prob);
    return Status::ok();
  });
}

}  // namespace quant::interp
