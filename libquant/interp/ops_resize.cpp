// Resize (opsets 10, 11, 13) and its deprecated predecessor Upsample
// (opsets 7-9). Nearest moves bytes, so it serves every element type;
// linear and cubic interpolate float32.
#include <cmath>
#include <cstring>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/layout.h"
#include "libquant/kernels/resize.h"

namespace quant::interp {
namespace {

struct ResizeConfig {
  kernels::ResizeParams params;
  float extrapolation = 0.0f;
  // Where scales/sizes/roi come from: Resize-11+ (X, roi, scales, sizes),
  // Resize-10 / Upsample-9 (X, scales), Upsample-7 (scales attribute).
  enum class Inputs { RoiScalesSizes, Scales, ScalesAttribute } inputs = Inputs::RoiScalesSizes;
  std::vector<float> scales_attr;
};

Expected<kernels::ResizeMode> parse_mode(const ir::Node& node) {
  const std::string m = node.attr_string("mode", "nearest");
  if (m == "nearest") return kernels::ResizeMode::Nearest;
  if (m == "linear" || m == "bilinear") return kernels::ResizeMode::Linear;  // Upsample-7 spelled it bilinear too
  if (m == "cubic") return kernels::ResizeMode::Cubic;
  return Status::bad_input(node.op_type + " mode '" + m + "' is not nearest, linear or cubic");
}

Expected<ResizeConfig> parse_config(const ir::Node& node, int64_t opset, bool upsample) {
  ResizeConfig c;
  QT_ASSIGN_OR_RETURN(c.params.mode, parse_mode(node));
  if (upsample || opset < 11) {
    // Resize-10 and Upsample: asymmetric coordinates; nearest rounding as ONNX Runtime does.
    if (c.params.mode == kernels::ResizeMode::Cubic) return Status::bad_input(node.op_type + " has no cubic mode before opset 11");
    c.params.coordinates = kernels::CoordinateMode::Asymmetric;
    c.params.nearest = kernels::NearestMode::Simple;
    c.inputs = ResizeConfig::Inputs::Scales;
    if (upsample && opset < 9) {
      c.inputs = ResizeConfig::Inputs::ScalesAttribute;
      const ir::Attribute* a = node.find_attribute("scales");
      if (!a) return Status::bad_input("Upsample needs a scales attribute before opset 9");
      c.scales_attr = a->floats;
    }
    return c;
  }
  const std::string ct = node.attr_string("coordinate_transformation_mode", "half_pixel");
  using CM = kernels::CoordinateMode;
  if (ct == "half_pixel") c.params.coordinates = CM::HalfPixel;
  else if (ct == "pytorch_half_pixel") c.params.coordinates = CM::PytorchHalfPixel;
  else if (ct == "align_corners") c.params.coordinates = CM::AlignCorners;
  else if (ct == "asymmetric") c.params.coordinates = CM::Asymmetric;
  else if (ct == "tf_half_pixel_for_nn") c.params.coordinates = CM::TfHalfPixelForNn;
  else if (ct == "tf_crop_and_resize") c.params.coordinates = CM::TfCropAndResize;
  else return Status::bad_input("Resize coordinate_transformation_mode '" + ct + "' is not supported");
  const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
  using NM = kernels::NearestMode;
  if (nm == "round_prefer_floor") c.params.nearest = NM::RoundPreferFloor;
  else if (nm == "round_prefer_ceil") c.params.nearest = NM::RoundPreferCeil;
  else if (nm == "floor") c.params.nearest = NM::Floor;
  else if (nm == "ceil") c.params.nearest = NM::Ceil;
  else return Status::bad_input("Resize nearest_mode '" + nm + "' is not supported");
  c.params.cubic_coeff_a = node.attr_float("cubic_coeff_a", -0.75f);
  c.params.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  c.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  return c;
}

bool given(std::span<const Tensor* const> in, size_t i) { return in.size() > i && in[i] && in[i]->size() > 0; }

Expected<std::vector<double>> read_floats(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Float32 && t.dtype() != DType::Float64)
    return Status::bad_input(node.op_type + " " + what + " must be float32 or float64");
  std::vector<double> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = t.as_double(i);
  return v;
}

// Output shape, per-axis scale and roi from the inputs the opset defines.
struct ResizePlan {
  Dims out;
  std::vector<double> scales, roi;
};

Expected<ResizePlan> plan(const ir::Node& node, const ResizeConfig& c, std::span<const Tensor* const> in, const Tensor& x) {
  const size_t rank = static_cast<size_t>(x.rank());
  ResizePlan p;
  p.roi.assign(2 * rank, 0.0);
  for (size_t d = 0; d < rank; ++d) p.roi[rank + d] = 1.0;
  bool from_sizes = false;
  if (c.inputs == ResizeConfig::Inputs::ScalesAttribute) {
    p.scales.assign(c.scales_attr.begin(), c.scales_attr.end());
  } else if (c.inputs == ResizeConfig::Inputs::Scales) {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    QT_ASSIGN_OR_RETURN(p.scales, read_floats(node, *in[1], "scales"));
  } else {
    if (given(in, 3)) {
      if (given(in, 2)) return Status::bad_input("Resize takes scales or sizes, not both");
      QT_ASSIGN_OR_RETURN(p.out, read_int_list(node, *in[3], "sizes"));
      from_sizes = true;
    } else if (given(in, 2)) {
      QT_ASSIGN_OR_RETURN(p.scales, read_floats(node, *in[2], "scales"));
    } else {
      return Status::bad_input("Resize needs scales or sizes");
    }
    if (c.params.coordinates == kernels::CoordinateMode::TfCropAndResize) {
      if (!given(in, 1)) return Status::bad_input("Resize tf_crop_and_resize needs roi");
      QT_ASSIGN_OR_RETURN(p.roi, read_floats(node, *in[1], "roi"));
      if (p.roi.size() != 2 * rank) return Status::bad_input("Resize roi must have 2 values per axis");
    }
  }
  if (from_sizes) {
    if (p.out.size() != rank) return Status::bad_input("Resize sizes must have one value per axis");
    for (size_t d = 0; d < rank; ++d) p.scales.push_back(static_cast<double>(p.out[d]) / static_cast<double>(x.shape()[d]));
  } else {
    if (p.scales.size() != rank)
      return Status::bad_input(node.op_type + " scales has " + std::to_string(p.scales.size()) + " values for rank " +
                               std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) {
      if (!(p.scales[d] > 0) || !(p.scales[d] * static_cast<double>(x.shape()[d]) < static_cast<double>(kMaxComputedElements)))
        return Status::bad_input(node.op_type + " scale " + std::to_string(p.scales[d]) + " is out of range");
      p.out.push_back(static_cast<int64_t>(std::floor(p.scales[d] * static_cast<double>(x.shape()[d]))));
    }
  }
  return p;
}

KernelResult make_resize_like(const KernelContext& ctx, bool upsample) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(ResizeConfig config, parse_config(node, ctx.opset, upsample));
  return make_kernel([&node, config](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    for (int64_t d : x.shape())
      if (d == 0) return Status::bad_input(node.op_type + " input " + dims_to_string(x.shape()) + " is empty");
    QT_ASSIGN_OR_RETURN(ResizePlan p, plan(node, config, in, x));
    QT_RETURN_IF_ERROR(check_computed_shape(node, p.out));
    const size_t rank = p.out.size();
    std::vector<kernels::AxisTaps> taps(rank);
    for (size_t d = 0; d < rank; ++d)
      kernels::resize_axis_taps(config.params, x.shape()[d], p.out[d], p.scales[d], p.roi[d], p.roi[rank + d], taps[d]);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), p.out));
    Tensor& y = out[0];
    if (config.params.mode == kernels::ResizeMode::Nearest) {
      // One tap per output index: a per-axis index map, -1 where tf_crop_and_resize extrapolates.
      std::vector<Dims> maps(rank);
      for (size_t d = 0; d < rank; ++d) {
        maps[d].resize(static_cast<size_t>(p.out[d]));
        for (size_t o = 0; o < maps[d].size(); ++o) maps[d][o] = taps[d].outside[o] ? -1 : taps[d].index[4 * o];
      }
      Tensor fill(x.dtype(), {});
      if (config.extrapolation != 0.0f) {
        QT_RETURN_IF_ERROR(dispatch_numeric(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          fill.data<T>()[0] = static_cast<T>(config.extrapolation);
          return Status::ok();
        }));
      }
      kernels::remap_axes(x.raw(), dtype_size(x.dtype()), x.shape(), maps, fill.raw(), y.raw());
      return Status::ok();
    }
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input (linear and cubic modes)"));
    kernels::resize_f32(x.data<float>(), x.shape(), taps, config.extrapolation, y.data<float>());
    return Status::ok();
  });
}

}  // namespace

KernelResult make_resize(const KernelContext& ctx) { return make_resize_like(ctx, false); }
KernelResult make_upsample(const KernelContext& ctx) { return make_resize_like(ctx, true); }

}  // namespace quant::interp
