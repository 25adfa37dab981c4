// QLinearConv (ONNX opset 10) on the integer convolution kernel.
#include <string>
#include <vector>

#include "libquant/interp/ops_qlinear.h"
#include "libquant/kernels/qconv.h"

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
  if (!is_8bit(p.x_type) || !is_8bit(p.w_type) || !is_8bit(p.y_type))
    return Status::bad_input("QLinearConv zero points must be uint8 or int8");
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

template <class TX, class TW, class TY>
void run_typed(const kernels::ConvGeometry& g, const ConvParams& p, const Tensor& x, const Tensor& w, const int32_t* bias,
               const std::vector<TW>& w_zero_points, Tensor& y) {
  kernels::QConvArgs<TX, TW> a;
  a.x = x.data<TX>(), a.x_zero_point = static_cast<TX>(p.x_zero_point), a.w = w.data<TW>();
  a.w_zero_point = w_zero_points.data(), a.w_zero_point_count = static_cast<int64_t>(w_zero_points.size());
  std::vector<unsigned char> workspace(kernels::qconv_workspace_bytes(g));
  kernels::qlinear_conv<TX, TW, TY>(g, a, bias, p.requant, y.data<TY>(), workspace.data());
}

}  // namespace

KernelResult make_qlinear_conv(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node));
  const kernels::RequantMode mode = requant_mode(ctx);
  auto build = [mode](std::span<const Tensor* const> in) { return conv_params(in, mode); };
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<ConvParams>(node, {kXScale, kXZero, kWScale, kWZero, kYScale, kYZero}, build)));
  return make_kernel([&node, attrs, params](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
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
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(p->y_type, shape));
    const int32_t* bias = b ? b->data<int32_t>() : nullptr;
    return dispatch_8bit(x.dtype(), "x", [&](auto tx) {
      return dispatch_8bit(w.dtype(), "w", [&](auto tw) {
        using TW = decltype(tw);
        const std::vector<TW> wz(p->w_zero_points.begin(), p->w_zero_points.end());
        return dispatch_8bit(p->y_type, "y", [&](auto ty) {
          run_typed<decltype(tx), TW, decltype(ty)>(g, *p, x, w, bias, wz, out[0]);
          return Status::ok();
        });
      });
    });
  });
}

}  // namespace quant::interp
