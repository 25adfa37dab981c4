// QLinearConv (ONNX opset 10) on the fast integer convolution kernel
// (kernels/qconv_fast.h); constant weights are packed once, at prepare time.
// With 16-bit x and y (qrun's 16-bit targets) it runs the int64-accumulating
// kernel of kernels/qwide.h instead.
#include <memory>
#include <string>
#include <vector>

#include "libquant/interp/dot_target.h"
#include "libquant/interp/ops_qlinear.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/qdot_sat16.h"
#include "libquant/kernels/qwide.h"

namespace quant::interp {
namespace {

enum : size_t { kX, kXScale, kXZero, kW, kWScale, kWZero, kYScale, kYZero, kBias };

struct ConvParams {
  int32_t x_zero_point = 0;
  DType x_type = DType::UInt8, w_type = DType::Int8, y_type = DType::UInt8;
  std::vector<int32_t> w_zero_points;  // 1 or one per output channel
  kernels::Requantizer requant;        // 1 or one multiplier per output channel
};

// QLinearConv-10: x_scale / y_scale per tensor; w_scale and w_zero_point per
// tensor or per output channel (1-D of M). The multiplier is computed as
// ONNX Runtime's QLinearConv does, x_scale * w_scale[m] / y_scale in float32.
// ONNX Runtime insists that per-channel weight zero points be all equal; they
// may differ here (each channel subtracts its own).
Expected<ConvParams> conv_params(std::span<const Tensor* const> in, kernels::RequantMode mode) {
  ConvParams p;
  QT_ASSIGN_OR_RETURN(float x_scale, scalar_scale(in[kXScale], "x_scale"));
  QT_ASSIGN_OR_RETURN(float y_scale, scalar_scale(in[kYScale], "y_scale"));
  const Tensor* xz = in[kXZero];
  const Tensor* wz = in[kWZero];
  const Tensor* yz = in[kYZero];
  if (!xz || !wz || !yz) return Status::bad_input("QLinearConv needs x_zero_point, w_zero_point and y_zero_point");
  p.x_type = xz->dtype(), p.w_type = wz->dtype(), p.y_type = yz->dtype();
  if ((!is_8bit(p.x_type) || !is_8bit(p.w_type) || !is_8bit(p.y_type)) && !is_wide_product(p.x_type, p.w_type, p.y_type))
    return Status::bad_input("QLinearConv zero points must be uint8 or int8 (or x and y both uint16 or int16 with 8-bit w)");
  QT_ASSIGN_OR_RETURN(p.x_zero_point, scalar_zero_point(xz, p.x_type, "x_zero_point"));
  QT_ASSIGN_OR_RETURN(int32_t y_zero_point, scalar_zero_point(yz, p.y_type, "y_zero_point"));
  const Tensor* ws = in[kWScale];
  if (!ws || ws->dtype() != DType::Float32 || ws->rank() > 1 || ws->size() < 1)
    return Status::bad_input("w_scale must be a float32 scalar or 1-D tensor");
  if (wz->rank() > 1 || (wz->size() != 1 && wz->size() != ws->size()))
    return Status::bad_input("w_zero_point " + dims_to_string(wz->shape()) + " does not match w_scale " +
                             dims_to_string(ws->shape()));
  p.w_zero_points = int32_values(*wz);
  QT_ASSIGN_OR_RETURN(p.requant, product_requantizer(mode, x_scale, *ws, "w_scale", y_scale, y_zero_point));
  return p;
}

// The weights packed for the kernel: at prepare time when the weights and
// their zero points are constants of the graph, else per run.
struct ConvWeights {
  const Tensor* w = nullptr;   // the constant packed below, or null
  const Tensor* wz = nullptr;
  kernels::PackedQConvWeights packed;
};

const Tensor* constant_input(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  return v ? ir::constant_data(v) : nullptr;
}

// Packs w [M, C/group, k...] with zero points wz (1 or M values), or returns
// an empty PackedQConvWeights when their types or shapes do not fit (the run
// then reports the error).
kernels::PackedQConvWeights pack_weights(const Tensor& w, const Tensor& wz, int64_t group) {
  if (w.dtype() != wz.dtype() || !is_8bit(w.dtype()) || w.rank() < 3 || group < 1 || w.dim(0) < 1 ||
      w.dim(0) % group != 0 || (wz.size() != 1 && wz.size() != w.dim(0)))
    return {};
  kernels::PackedQConvWeights packed;
  (void)dispatch_8bit(w.dtype(), "w", [&](auto tw) {
    using TW = decltype(tw);
    packed = kernels::PackedQConvWeights(w.data<TW>(), w.dim(0), group, w.size() / w.dim(0), wz.data<TW>(), wz.size(),
                                         kernels::detail::best_conv_qgemm_isa(), w.size() / std::max<int64_t>(w.dim(0) * w.dim(1), 1));
    return Status::ok();
  });
  return packed;
}

bool is_depthwise(const kernels::ConvGeometry& g) {
  return g.in_channels == g.group && g.out_channels == g.group;
}

// The convolution as a saturating target computes it (interp/dot_target.h):
// int8 weights reordered into the target's K order, accumulators emulated,
// then the same requantization as the exact path.
template <class TX, class TY>
Status run_saturating(const kernels::ConvGeometry& g, const Tensor& x, const ConvParams& p, const Tensor& w,
                      const Tensor& wz, const int32_t* bias, const DotTarget& dot, Tensor& y) {
  const int64_t m = g.out_channels, group_in = g.in_channels / g.group;
  const int64_t taps = w.size() / std::max<int64_t>(m * group_in, 1);
  const auto weights = kernels::Sat16Weights::from_conv(w.data<int8_t>(), m, group_in, taps, wz.data<int8_t>(), wz.size());
  const int64_t plane = y.size() / std::max<int64_t>(g.batch * m, 1);
  std::vector<int32_t> acc(static_cast<size_t>(g.batch * plane * m));
  dot.record(kernels::qconv_sat16_s32<TX>(g, x.data<TX>(), static_cast<TX>(p.x_zero_point), weights, acc.data()));
  for (int64_t n = 0; n < g.batch; ++n)
    kernels::requantize<TY>(acc.data() + n * plane * m, plane, m, m, bias, p.requant, 0, y.data<TY>() + n * m * plane, 1,
                            plane);
  return Status::ok();
}

}  // namespace

KernelResult make_qlinear_conv(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node));
  const kernels::RequantMode mode = requant_mode(ctx);
  auto build = [mode, &node](std::span<const Tensor* const> in) -> Expected<ConvParams> {
    QT_ASSIGN_OR_RETURN(ConvParams p, conv_params(in, mode));
    apply_folded_activation(node, p.requant);
    return p;
  };
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<ConvParams>(node, {kXScale, kXZero, kWScale, kWZero, kYScale, kYZero}, build)));
  auto weights = std::make_shared<ConvWeights>();
  weights->w = constant_input(node, kW);
  weights->wz = constant_input(node, kWZero);
  const Tensor* xz = constant_input(node, kXZero);
  const bool wide = xz && is_16bit(xz->dtype());  // the 16-bit kernel reads w as it is
  if (weights->w && weights->wz && !wide) weights->packed = pack_weights(*weights->w, *weights->wz, attrs.group);
  if (weights->packed.empty()) weights->w = weights->wz = nullptr;
  else
    report_weight_pairs(node, weights->packed.pairs_bounded(),
                        weights->w->dim(0) == attrs.group && weights->w->dim(1) == 1, weights->packed.k_tap_major());
  const int threads = ctx.options.threads;
  const DotTarget dot = dot_target(ctx);
  return make_kernel([&node, attrs, params, weights, threads, dot](std::span<const Tensor* const> in,
                                                                   std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 8));
    std::optional<ConvParams> scratch;
    QT_ASSIGN_OR_RETURN(const ConvParams* p, params.get(in, scratch));
    const Tensor& x = *in[kX];
    const Tensor& w = *in[kW];
    if (x.dtype() != p->x_type || w.dtype() != p->w_type)
      return Status::bad_input("QLinearConv x / w types differ from their zero points'");
    QT_ASSIGN_OR_RETURN(auto g, conv_geometry(attrs, x, w));
    const int64_t channels = static_cast<int64_t>(p->requant.count());
    if ((channels != 1 && channels != g.out_channels) ||
        (p->w_zero_points.size() != 1 && static_cast<int64_t>(p->w_zero_points.size()) != g.out_channels))
      return Status::bad_input("QLinearConv w_scale / w_zero_point must have 1 or " + std::to_string(g.out_channels) + " values");
    const Tensor* b = optional_input(in, kBias);
    if (b && (b->dtype() != DType::Int32 || b->size() != g.out_channels))
      return Status::bad_input("QLinearConv bias must be int32 with " + std::to_string(g.out_channels) + " values");
    Dims shape{g.batch, g.out_channels};
    shape.insert(shape.end(), g.out_spatial.begin(), g.out_spatial.end());
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->y_type, shape));
    const int32_t* bias = b ? b->data<int32_t>() : nullptr;
    if (is_16bit(p->x_type))
      return dispatch_16bit(p->x_type, "x", [&](auto tx) {
        using TX = decltype(tx);
        return dispatch_8bit(p->w_type, "w", [&](auto tw) {
          using TW = decltype(tw);
          kernels::qconv_wide<TX, TW, TX>(g, x.data<TX>(), p->x_zero_point, w.data<TW>(), in[kWZero]->data<TW>(),
                                          in[kWZero]->size(), bias, p->requant, out[0].data<TX>());
          return Status::ok();
        });
      });
    // ONNX Runtime's depthwise kernels multiply in 16 bits: exact everywhere.
    if (dot.applies(x.dtype(), w.dtype(), false) && !is_depthwise(g))
      return dispatch_8bit(x.dtype(), "x", [&](auto tx) {
        return dispatch_8bit(p->y_type, "y", [&](auto ty) {
          return run_saturating<decltype(tx), decltype(ty)>(g, x, *p, w, *in[kWZero], bias, dot, out[0]);
        });
      });
    kernels::PackedQConvWeights local;
    const kernels::PackedQConvWeights* packed = &weights->packed;
    if (&w != weights->w || in[kWZero] != weights->wz) {
      local = pack_weights(w, *in[kWZero], g.group);
      if (local.empty()) return Status::bad_input("QLinearConv w and w_zero_point do not fit");
      packed = &local;
    }
    return dispatch_8bit(x.dtype(), "x", [&](auto tx) {
      using TX = decltype(tx);
      return dispatch_8bit(p->y_type, "y", [&](auto ty) {
        using TY = decltype(ty);
        kernels::qconv_fast<TX, TY>(g, x.data<TX>(), static_cast<TX>(p->x_zero_point), *packed, bias, &p->requant,
                                    out[0].data<TY>(), threads);
        return Status::ok();
      });
    });
  });
}

}  // namespace quant::interp
