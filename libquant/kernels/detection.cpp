#include "libquant/kernels/detection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace quant::kernels {
namespace {

// A box as its min and max corners.
struct Corners {
  float y1, x1, y2, x2;
};

Corners corners_of(const float* b, bool center_point_box) {
  if (center_point_box) {
    const float xc = b[0], yc = b[1], hw = b[2] / 2, hh = b[3] / 2;
    return {yc - hh, xc - hw, yc + hh, xc + hw};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Whether IoU(a, b) > threshold; no overlap or an empty union never suppresses.
bool suppresses(const Corners& a, const Corners& b, float threshold) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  const float inter = ih * iw;
  const float uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  if (uni <= 0) return false;
  return inter / uni > threshold;
}

}  // namespace

std::vector<NmsSelection> non_max_suppression(const float* boxes, const float* scores, int64_t batches, int64_t classes,
                                              int64_t num_boxes, const NmsParams& p) {
  std::vector<NmsSelection> out;
  if (p.max_output_boxes_per_class <= 0) return out;
  std::vector<int64_t> order;
  std::vector<Corners> kept;
  for (int64_t b = 0; b < batches; ++b) {
    const float* bb = boxes + b * num_boxes * 4;
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = scores + (b * classes + c) * num_boxes;
      order.clear();
      for (int64_t i = 0; i < num_boxes; ++i)
        if (!p.has_score_threshold || s[i] > p.score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [s](int64_t i, int64_t j) { return s[i] > s[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_output_boxes_per_class) break;
        const Corners box = corners_of(bb + i * 4, p.center_point_box);
        if (std::any_of(kept.begin(), kept.end(), [&](const Corners& k) { return suppresses(k, box, p.iou_threshold); }))
          continue;
        kept.push_back(box);
        out.push_back({b, c, i});
      }
    }
  }
  return out;
}

namespace {

// The four taps of a bilinear sample at (y, x) of an h x w plane, as RoiAlign
// takes them (ONNX reference op_roi_align.py, after ONNX Runtime): a point
// beyond one pixel outside the plane has zero weights; otherwise coordinates
// below 0 clamp to 0 and the last row/column repeats.
struct BilinearTaps {
  int64_t i1 = 0, i2 = 0, i3 = 0, i4 = 0;
  float w1 = 0, w2 = 0, w3 = 0, w4 = 0;
};

BilinearTaps roi_bilinear_taps(float y, float x, int64_t h, int64_t w) {
  BilinearTaps t;
  if (!(y >= -1.0f && y <= static_cast<float>(h) && x >= -1.0f && x <= static_cast<float>(w))) return t;  // NaN too
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<float>(y0);
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<float>(x0);
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0), hy = 1 - ly, hx = 1 - lx;
  t.i1 = y0 * w + x0, t.i2 = y0 * w + x1, t.i3 = y1 * w + x0, t.i4 = y1 * w + x1;
  t.w1 = hy * hx, t.w2 = hy * lx, t.w3 = ly * hx, t.w4 = ly * lx;
  return t;
}

}  // namespace

RoiGeometry roi_geometry(const float* roi, const RoiAlignParams& p) {
  const float offset = p.half_pixel ? 0.5f : 0.0f;
  RoiGeometry g;
  g.x1 = roi[0] * p.spatial_scale - offset;
  g.y1 = roi[1] * p.spatial_scale - offset;
  float roi_w = roi[2] * p.spatial_scale - offset - g.x1, roi_h = roi[3] * p.spatial_scale - offset - g.y1;
  if (!p.half_pixel) {  // the opset-10 rule: a roi is at least one pixel wide
    roi_w = std::max(roi_w, 1.0f);
    roi_h = std::max(roi_h, 1.0f);
  }
  g.bin_h = roi_h / static_cast<float>(p.output_height);
  g.bin_w = roi_w / static_cast<float>(p.output_width);
  // An inverted or non-finite roi samples nothing; counts are capped at 4e18
  // so that the conversion is defined (the caller refuses large counts).
  const auto grid = [&](float bin) {
    const float c = std::ceil(bin);  // NaN and negative sizes sample nothing
    if (p.sampling_ratio > 0) return p.sampling_ratio;
    return c >= 1.0f ? static_cast<int64_t>(std::min(c, 4.0e18f)) : int64_t{0};
  };
  g.grid_h = grid(g.bin_h);
  g.grid_w = grid(g.bin_w);
  return g;
}

void roi_align(const float* x, int64_t c, int64_t h, int64_t w, const float* rois, const int64_t* batch_indices,
               int64_t num_rois, const RoiAlignParams& p, float* y) {
  const int64_t oh = p.output_height, ow = p.output_width;
  std::vector<BilinearTaps> taps;
  for (int64_t r = 0; r < num_rois; ++r) {
    const RoiGeometry g = roi_geometry(rois + r * 4, p);
    const float x1 = g.x1, y1 = g.y1, bin_h = g.bin_h, bin_w = g.bin_w;
    const int64_t grid_h = g.grid_h, grid_w = g.grid_w;
    const float count = static_cast<float>(std::max<int64_t>(grid_h * grid_w, 1));
    // The sample taps of every bin, shared by all channels.
    taps.clear();
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const float yy = y1 + static_cast<float>(ph) * bin_h +
                           (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const float xx = x1 + static_cast<float>(pw) * bin_w +
                             (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
            taps.push_back(roi_bilinear_taps(yy, xx, h, w));
          }
        }
    const size_t per_bin = static_cast<size_t>(grid_h * grid_w);
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = x + (batch_indices[r] * c + ch) * h * w;
      float* out = y + (r * c + ch) * oh * ow;
      for (int64_t b = 0; b < oh * ow; ++b) {
        const BilinearTaps* t = taps.data() + static_cast<size_t>(b) * per_bin;
        float acc = 0;
        for (size_t k = 0; k < per_bin; ++k) {
          const float v1 = t[k].w1 * plane[t[k].i1], v2 = t[k].w2 * plane[t[k].i2], v3 = t[k].w3 * plane[t[k].i3],
                      v4 = t[k].w4 * plane[t[k].i4];
          // "max" takes the largest weighted tap, not the interpolated value
          // (ONNX Runtime's rule, which the ONNX reference and tests follow).
          if (p.max_mode)
            acc = k == 0 ? std::max({v1, v2, v3, v4}) : std::max({acc, v1, v2, v3, v4});
          else
            acc += v1 + v2 + v3 + v4;
        }
        out[b] = p.max_mode ? acc : acc / count;
      }
    }
  }
}

namespace {

// Maps a normalized grid coordinate in [-1, 1] to pixel units (GridSample-16):
// -1 and 1 are the centers of the edge pixels with align_corners, else their
// outer edges.
float denormalize(float v, int64_t size, bool align_corners) {
  const float s = static_cast<float>(size);
  return align_corners ? (v + 1) / 2 * (s - 1) : ((v + 1) * s - 1) / 2;
}

// Reflects v into [lo, hi] as often as needed (padding_mode "reflection").
// In double, without an integer conversion, so that any finite v is defined.
float reflect(float v, float lo, float hi) {
  const double range = static_cast<double>(hi) - lo;
  if (range <= 0) return lo;
  if (v >= lo && v <= hi) return v;
  const double d = v < lo ? static_cast<double>(lo) - v : static_cast<double>(v) - hi;
  const double r = std::fmod(d, range);
  const bool even = std::fmod(std::floor(d / range), 2.0) == 0.0;  // reflections so far
  const double near_edge = v < lo ? lo : hi, far_edge = v < lo ? hi : lo;
  const double s = v < lo ? 1.0 : -1.0;  // the direction from the near edge into the range
  return static_cast<float>(even ? near_edge + s * r : far_edge - s * r);
}

// Cubic convolution weights of the 4 taps around a point at fraction t
// (A = -0.75, as PyTorch and the ONNX reference use).
void cubic_weights(float t, float wts[4]) {
  constexpr float A = -0.75f;
  const auto near = [](float d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };           // |d| <= 1
  const auto far = [](float d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };     // 1 < |d| < 2
  wts[0] = far(t + 1);
  wts[1] = near(t);
  wts[2] = near(1 - t);
  wts[3] = far(2 - t);
}

class GridSampler {
 public:
  GridSampler(const GridSampleParams& p, int64_t h, int64_t w) : p_(p), h_(h), w_(w) {
    lo_x_ = p.align_corners ? 0.0f : -0.5f;
    lo_y_ = lo_x_;
    hi_x_ = p.align_corners ? static_cast<float>(w - 1) : static_cast<float>(w) - 0.5f;
    hi_y_ = p.align_corners ? static_cast<float>(h - 1) : static_cast<float>(h) - 0.5f;
  }

  float sample(const float* plane, float gx, float gy) const {
    if (!std::isfinite(gx) || !std::isfinite(gy)) return std::numeric_limits<float>::quiet_NaN();
    float x = denormalize(gx, w_, p_.align_corners), y = denormalize(gy, h_, p_.align_corners);
    if (p_.mode == GridSampleMode::Nearest) {
      x = std::nearbyint(x);  // round half to even
      y = std::nearbyint(y);
    }
    if (x < lo_x_ || x > hi_x_ || y < lo_y_ || y > hi_y_) {
      if (p_.padding == GridSamplePadding::Border) {
        x = std::clamp(x, 0.0f, static_cast<float>(w_ - 1));
        y = std::clamp(y, 0.0f, static_cast<float>(h_ - 1));
      } else if (p_.padding == GridSamplePadding::Reflection) {
        x = reflect(x, lo_x_, hi_x_);
        y = reflect(y, lo_y_, hi_y_);
      }
    }
    // With zero padding a point more than two pixels outside has no tap inside
    // (this also keeps the integer conversions below in range).
    if (!(x > -3.0f && x < static_cast<float>(w_) + 2.0f && y > -3.0f && y < static_cast<float>(h_) + 2.0f)) return 0.0f;
    if (p_.mode == GridSampleMode::Nearest)
      return pixel(plane, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
    const float fx = std::floor(x), fy = std::floor(y);
    const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    if (p_.mode == GridSampleMode::Bilinear) {
      const float dx = x - fx, dy = y - fy;
      const float top = (1 - dx) * pixel(plane, y0, x0) + dx * pixel(plane, y0, x0 + 1);
      const float bottom = (1 - dx) * pixel(plane, y0 + 1, x0) + dx * pixel(plane, y0 + 1, x0 + 1);
      return (1 - dy) * top + dy * bottom;
    }
    float wx[4], wy[4];
    cubic_weights(x - fx, wx);
    cubic_weights(y - fy, wy);
    float acc = 0;
    for (int64_t i = 0; i < 4; ++i) {
      float row = 0;
      for (int64_t j = 0; j < 4; ++j) row += wx[j] * pixel(plane, y0 - 1 + i, x0 - 1 + j);
      acc += wy[i] * row;
    }
    return acc;
  }

 private:
  // The pixel at integer (r, col): zero outside with "zeros", the nearest
  // edge pixel with "border", the reflected pixel with "reflection".
  float pixel(const float* plane, int64_t r, int64_t col) const {
    switch (p_.padding) {
      case GridSamplePadding::Zeros:
        if (r < 0 || r >= h_ || col < 0 || col >= w_) return 0.0f;
        break;
      case GridSamplePadding::Border:
        r = std::clamp<int64_t>(r, 0, h_ - 1);
        col = std::clamp<int64_t>(col, 0, w_ - 1);
        break;
      case GridSamplePadding::Reflection:
        r = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(r), lo_y_, hi_y_)), 0, h_ - 1);
        col = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(col), lo_x_, hi_x_)), 0, w_ - 1);
        break;
    }
    return plane[r * w_ + col];
  }

  GridSampleParams p_;
  int64_t h_, w_;
  float lo_x_, lo_y_, hi_x_, hi_y_;
};

}  // namespace

void grid_sample(const float* x, int64_t n, int64_t c, int64_t h, int64_t w, const float* grid, int64_t oh, int64_t ow,
                 const GridSampleParams& p, float* y) {
  const GridSampler sampler(p, h, w);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = x + (b * c + ch) * h * w;
      const float* g = grid + b * oh * ow * 2;
      float* out = y + (b * c + ch) * oh * ow;
      for (int64_t i = 0; i < oh * ow; ++i) out[i] = sampler.sample(plane, g[2 * i], g[2 * i + 1]);
    }
}

}  // namespace quant::kernels
