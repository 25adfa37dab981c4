// Detection and sampling reference kernels: NonMaxSuppression (opset 11),
// RoiAlign (opset 16) and GridSample (opset 16, 4-D). Float32, standard
// library only; shapes are checked by the caller (libquant/interp/ops_detection.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace quant::kernels {

// One (batch, class, box) triple of NonMaxSuppression's output.
struct NmsSelection {
  int64_t batch, cls, box;
};

struct NmsParams {
  bool center_point_box = false;  // [x_center, y_center, width, height] instead of two corners [y1, x1, y2, x2]
  int64_t max_output_boxes_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
};

// NonMaxSuppression (opset 10/11): boxes [batches, boxes, 4], scores
// [batches, classes, boxes]. Per batch and class: the boxes scoring above
// score_threshold in descending score order (ties: lower index first), each
// kept unless its IoU with a kept box exceeds iou_threshold, at most
// max_output_boxes_per_class. Corners may come in either order (the spec:
// "any diagonal pair"); a box of zero area overlaps nothing.
std::vector<NmsSelection> non_max_suppression(const float* boxes, const float* scores, int64_t batches, int64_t classes,
                                              int64_t num_boxes, const NmsParams& p);

struct RoiAlignParams {
  bool max_mode = false;     // mode "max" (else "avg")
  bool half_pixel = true;    // coordinate_transformation_mode "half_pixel" (else "output_half_pixel")
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // 0: ceil(roi size / output size) samples per bin and axis
  float spatial_scale = 1;
};

// Where a roi's bins start and how many samples each takes per axis.
struct RoiGeometry {
  float x1 = 0, y1 = 0, bin_h = 0, bin_w = 0;
  int64_t grid_h = 0, grid_w = 0;
};
RoiGeometry roi_geometry(const float* roi, const RoiAlignParams& p);

// RoiAlign (opset 16): x [n, c, h, w], rois [num_rois, 4] (x1, y1, x2, y2),
// batch_indices [num_rois] (each in [0, n)); y [num_rois, c, oh, ow].
void roi_align(const float* x, int64_t c, int64_t h, int64_t w, const float* rois, const int64_t* batch_indices,
               int64_t num_rois, const RoiAlignParams& p, float* y);

enum class GridSampleMode { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding { Zeros, Border, Reflection };

struct GridSampleParams {
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
};

// GridSample (opset 16, 4-D): x [n, c, h, w], grid [n, oh, ow, 2] of (x, y)
// in [-1, 1]; y [n, c, oh, ow].
void grid_sample(const float* x, int64_t n, int64_t c, int64_t h, int64_t w, const float* grid, int64_t oh, int64_t ow,
                 const GridSampleParams& p, float* y);

}  // namespace quant::kernels
