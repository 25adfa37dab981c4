// Detection heads and spatial sampling: NonMaxSuppression (opset 10-11),
// RoiAlign (opset 10, 16), GridSample (opset 16, 4-D). Float reference kernels
// (libquant/kernels/detection.h); quantization leaves these ops float.
#include <cmath>
#include <string>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/detection.h"

namespace quant::interp {
namespace {

// An optional scalar input: absent gives nullopt.
template <class T>
Expected<std::optional<T>> optional_scalar(const ir::Node& node, std::span<const Tensor* const> in, size_t i, DType want,
                                           const char* what) {
  if (i >= in.size() || !in[i]) return std::optional<T>();
  QT_RETURN_IF_ERROR(require_dtype(node, *in[i], want, what));
  if (in[i]->size() != 1)
    return Status::bad_input(node.op_type + " " + what + " must be a scalar, got " + dims_to_string(in[i]->shape()));
  return std::optional<T>(in[i]->data<T>()[0]);
}

}  // namespace

// NonMaxSuppression (opset 11): boxes [batches, boxes, 4], scores [batches,
// classes, boxes], optional max_output_boxes_per_class (int64, default 0),
// iou_threshold and score_threshold (float); output [selected, 3] int64.
KernelResult make_non_max_suppression(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t center = node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1)
    return Status::bad_input("NonMaxSuppression center_point_box must be 0 or 1, got " + std::to_string(center));
  return make_kernel([&node, center](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& boxes = *in[0];
    const Tensor& scores = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, boxes, DType::Float32, "boxes"));
    QT_RETURN_IF_ERROR(require_dtype(node, scores, DType::Float32, "scores"));
    if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1))
      return Status::bad_input("NonMaxSuppression needs boxes [batches, boxes, 4] and scores [batches, classes, boxes], got " +
                               dims_to_string(boxes.shape()) + " and " + dims_to_string(scores.shape()));
    kernels::NmsParams p;
    p.center_point_box = center == 1;
    QT_ASSIGN_OR_RETURN(auto max_out, optional_scalar<int64_t>(node, in, 2, DType::Int64, "max_output_boxes_per_class"));
    QT_ASSIGN_OR_RETURN(auto iou, optional_scalar<float>(node, in, 3, DType::Float32, "iou_threshold"));
    QT_ASSIGN_OR_RETURN(auto score, optional_scalar<float>(node, in, 4, DType::Float32, "score_threshold"));
    p.max_output_boxes_per_class = max_out.value_or(0);
    p.iou_threshold = iou.value_or(0.0f);
    if (p.iou_threshold < 0.0f || p.iou_threshold > 1.0f)
      return Status::bad_input("NonMaxSuppression iou_threshold must be in [0, 1], got " + std::to_string(p.iou_threshold));
    p.has_score_threshold = score.has_value();
    p.score_threshold = score.value_or(0.0f);
    const auto picked = kernels::non_max_suppression(boxes.data<float>(), scores.data<float>(), boxes.dim(0), scores.dim(1),
                                                     boxes.dim(1), p);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Int64, {static_cast<int64_t>(picked.size()), 3}));
    int64_t* y = out[0].data<int64_t>();
    for (const auto& s : picked) {
      *y++ = s.batch;
      *y++ = s.cls;
      *y++ = s.box;
    }
    return Status::ok();
  });
}

// RoiAlign (opset 10 and 16; opset 16 added coordinate_transformation_mode,
// default "half_pixel", where opset 10 behaves as "output_half_pixel").
KernelResult make_roi_align(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  kernels::RoiAlignParams p;
  const std::string mode = node.attr_string("mode", "avg");
  const std::string transform =
      node.attr_string("coordinate_transformation_mode", ctx.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (mode != "avg" && mode != "max") return Status::bad_input("RoiAlign mode must be 'avg' or 'max', got '" + mode + "'");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return Status::bad_input("RoiAlign coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', got '" +
                             transform + "'");
  p.max_mode = mode == "max";
  p.half_pixel = transform == "half_pixel";
  p.output_height = node.attr_int("output_height", 1);
  p.output_width = node.attr_int("output_width", 1);
  p.sampling_ratio = node.attr_int("sampling_ratio", 0);
  p.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (p.output_height < 1 || p.output_width < 1 || p.sampling_ratio < 0 || !std::isfinite(p.spatial_scale))
    return Status::bad_input("RoiAlign needs output_height, output_width >= 1, sampling_ratio >= 0 and a finite spatial_scale");
  return make_kernel([&node, p](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& x = *in[0];
    const Tensor& rois = *in[1];
    const Tensor& batch = *in[2];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "X"));
    QT_RETURN_IF_ERROR(require_dtype(node, rois, DType::Float32, "rois"));
    QT_RETURN_IF_ERROR(require_dtype(node, batch, DType::Int64, "batch_indices"));
    if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || batch.rank() != 1 || batch.dim(0) != rois.dim(0))
      return Status::bad_input("RoiAlign needs X [n, c, h, w], rois [num_rois, 4] and batch_indices [num_rois], got " +
                               dims_to_string(x.shape()) + ", " + dims_to_string(rois.shape()) + " and " +
                               dims_to_string(batch.shape()));
    const int64_t num_rois = rois.dim(0);
    int64_t samples = 0;
    for (int64_t r = 0; r < num_rois; ++r) {
      const int64_t b = batch.data<int64_t>()[r];
      if (b < 0 || b >= x.dim(0))
        return Status::bad_input("RoiAlign batch index " + std::to_string(b) + " is outside the batch of " +
                                 std::to_string(x.dim(0)));
      const float* roi = rois.data<float>() + r * 4;
      for (int k = 0; k < 4; ++k)
        if (!std::isfinite(roi[k])) return Status::bad_input("RoiAlign roi " + std::to_string(r) + " is not finite");
      const kernels::RoiGeometry g = kernels::roi_geometry(roi, p);
      if (!std::isfinite(g.x1) || !std::isfinite(g.y1) || g.grid_h > kMaxComputedElements ||
          g.grid_w > kMaxComputedElements / std::max<int64_t>(g.grid_h, 1))
        return Status::bad_input("RoiAlign roi " + std::to_string(r) + " asks for too many samples");
      samples = std::max(samples, g.grid_h * g.grid_w);
    }
    const Dims shape{num_rois, x.dim(1), p.output_height, p.output_width};
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    // The kernel keeps the taps of one roi's bins (32 bytes each): at most 2^24 of them.
    constexpr int64_t kMaxRoiSamples = int64_t{1} << 24;
    if (samples > kMaxRoiSamples / std::max<int64_t>(p.output_height * p.output_width, 1))
      return Status::bad_input("RoiAlign rois ask for too many samples");
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    if (x.dim(2) == 0 || x.dim(3) == 0) return Status::ok();
    kernels::roi_align(x.data<float>(), x.dim(1), x.dim(2), x.dim(3), rois.data<float>(), batch.data<int64_t>(), num_rois, p,
                       out[0].data<float>());
    return Status::ok();
  });
}

// GridSample (opset 16: modes bilinear, nearest, bicubic; opset 20 renamed
// them linear and cubic and allowed N-D input, of which the 4-D case runs here).
KernelResult make_grid_sample(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  kernels::GridSampleParams p;
  const std::string mode = node.attr_string("mode", ctx.opset >= 20 ? "linear" : "bilinear");
  const std::string padding = node.attr_string("padding_mode", "zeros");
  if (mode == "bilinear" || mode == "linear") p.mode = kernels::GridSampleMode::Bilinear;
  else if (mode == "nearest") p.mode = kernels::GridSampleMode::Nearest;
  else if (mode == "bicubic" || mode == "cubic") p.mode = kernels::GridSampleMode::Bicubic;
  else return Status::bad_input("GridSample mode '" + mode + "' is not one of bilinear/linear, nearest, bicubic/cubic");
  if (padding == "zeros") p.padding = kernels::GridSamplePadding::Zeros;
  else if (padding == "border") p.padding = kernels::GridSamplePadding::Border;
  else if (padding == "reflection") p.padding = kernels::GridSamplePadding::Reflection;
  else return Status::bad_input("GridSample padding_mode '" + padding + "' is not one of zeros, border, reflection");
  p.align_corners = node.attr_int("align_corners", 0) != 0;
  return make_kernel([&node, p](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& grid = *in[1];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "X"));
    QT_RETURN_IF_ERROR(require_dtype(node, grid, DType::Float32, "grid"));
    if (x.rank() != 4 || grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2)
      return Status::bad_input("GridSample needs X [n, c, h, w] and grid [n, h_out, w_out, 2] (4-D only), got " +
                               dims_to_string(x.shape()) + " and " + dims_to_string(grid.shape()));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, {x.dim(0), x.dim(1), grid.dim(1), grid.dim(2)}));
    if (x.dim(2) == 0 || x.dim(3) == 0) {
      if (out[0].size() > 0) return Status::bad_input("GridSample input " + dims_to_string(x.shape()) + " has no pixel to sample");
      return Status::ok();
    }
    kernels::grid_sample(x.data<float>(), x.dim(0), x.dim(1), x.dim(2), x.dim(3), grid.data<float>(), grid.dim(1), grid.dim(2), p,
                         out[0].data<float>());
    return Status::ok();
  });
}

}  // namespace quant::interp
