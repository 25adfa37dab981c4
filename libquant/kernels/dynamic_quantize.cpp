#include "libquant/kernels/dynamic_quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quant::kernels {
namespace {

// min(0, min(x)) and max(0, max(x)), NaN ignored.
void range_with_zero(const float* x, int64_t count, float& lo, float& hi) {
  lo = 0;
  hi = 0;
  for (int64_t i = 0; i < count; ++i) {
    // Comparisons with NaN are false, so NaN never moves the range.
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  // +-inf would make the scale inf and every q the zero point; keep the range finite.
  lo = std::max(lo, std::numeric_limits<float>::lowest());
  hi = std::min(hi, std::numeric_limits<float>::max());
}

template <class Q>
Q quantize_one(float x, float scale, int32_t zero_point) {
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  float r = std::nearbyint(x / scale);  // ties to even in the default rounding mode
  if (std::isnan(r)) return static_cast<Q>(zero_point);
  r = std::clamp(r + static_cast<float>(zero_point), lo, hi);
  return static_cast<Q>(r);
}

}  // namespace

void dynamic_quantize_linear_u8(const float* x, int64_t count, uint8_t* y, float* scale, uint8_t* zero_point) {
  float lo, hi;
  range_with_zero(x, count, lo, hi);
  const float s = (hi - lo) / 255.0f;
  *scale = s;
  if (!(s > 0) || !std::isfinite(s)) {
    *zero_point = 0;
    std::fill(y, y + count, uint8_t{0});
    return;
  }
  // DynamicQuantizeLinear-11: zero point = cast(round(saturate(qmin - x_min / scale))).
  const float zp = std::nearbyint(std::clamp(0.0f - lo / s, 0.0f, 255.0f));
  *zero_point = static_cast<uint8_t>(zp);
  for (int64_t i = 0; i < count; ++i) y[i] = quantize_one<uint8_t>(x[i], s, *zero_point);
}

void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int8_t* q, float* scales, int32_t* zero_points) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float lo, hi;
    range_with_zero(row, cols, lo, hi);
    const float s = std::max((hi - lo) / 255.0f, std::numeric_limits<float>::epsilon());
    const auto zp = static_cast<int32_t>(std::clamp(std::nearbyint(-128.0f - lo / s), -128.0f, 127.0f));
    scales[r] = s;
    zero_points[r] = zp;
    for (int64_t c = 0; c < cols; ++c) q[r * cols + c] = quantize_one<int8_t>(row[c], s, zp);
  }
}

}  // namespace quant::kernels
