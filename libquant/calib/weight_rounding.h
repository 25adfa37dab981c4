// Rounding a weight matrix to a symmetric integer grid, group by group
// (qconvert --weight-rounding rtn|gptq|hqq; the rounding methods are
// calib/gptq.h and calib/hqq.h, round-to-nearest is here).
//
// W is [rows, cols] row-major: one row per output channel, cols along the
// reduction axis K (torch's Linear layout; qtool's MatMul weight [K, N]
// transposed). A group is `group` consecutive values of a row sharing one
// scale; the last group of a row may be shorter. group == cols is one scale
// per row (per channel). w ~ scale * q with q in [qmin, qmax].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "libquant/core/status.h"

namespace quant::calib {

struct SymmetricCodes {
  float divisor;  // scale = absmax / divisor (at least float epsilon)
  int qmin, qmax;
};

// torchao Int8DynActInt4Weight (get_group_qparams_symmetric): absmax / 7.5,
// codes -8..7 (passes/dynamic.h).
inline constexpr SymmetricCodes kInt4Torchao{7.5f, -8, 7};
// Symmetric int8 per channel: absmax / 127, saturated to int8 (DESIGN "Numerics").
inline constexpr SymmetricCodes kInt8Symmetric{127.0f, -128, 127};

struct RoundedWeights {
  int64_t rows = 0, cols = 0, group = 0;
  std::vector<int8_t> q;      // rows x cols
  std::vector<float> scale;   // rows x groups_per_row()
  int64_t groups_per_row() const { return cols / group + (cols % group != 0); }
  float dequantized(int64_t r, int64_t c) const {
    return scale[static_cast<size_t>(r * groups_per_row() + c / group)] * q[static_cast<size_t>(r * cols + c)];
  }
};

enum class WeightRounding { Rtn, Gptq, Hqq };
Expected<WeightRounding> weight_rounding_from_name(const std::string& name);
const char* weight_rounding_name(WeightRounding r);

// absmax of the finite values / divisor, at least float epsilon (torchao's eps clamp).
float symmetric_scale(const float* w, int64_t n, SymmetricCodes codes);
// clamp(round_half_even(w / scale)), NaN -> 0.
// Inline: called once per weight (a large model's conversion time, DESIGN "Large models").
inline int8_t round_code(float w, float scale, SymmetricCodes codes) {
  float v = std::nearbyint(w / scale);
  if (std::isnan(v)) v = 0;
  return static_cast<int8_t>(std::clamp(v, static_cast<float>(codes.qmin), static_cast<float>(codes.qmax)));
}

// Each group of W rounded to nearest with the scale `scale_of(group values, count)` gives it.
RoundedWeights round_groups(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes,
                            const std::function<float(const float*, int64_t)>& scale_of);

// Round to nearest with each group's absmax scale: the rounding qconvert has
// always done (bit for bit).
RoundedWeights round_to_nearest(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes);

}  // namespace quant::calib
