#include "libquant/calib/weight_rounding.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quant::calib {

Expected<WeightRounding> weight_rounding_from_name(const std::string& name) {
  if (name == "rtn") return WeightRounding::Rtn;
  if (name == "gptq") return WeightRounding::Gptq;
  if (name == "hqq") return WeightRounding::Hqq;
  return Status::bad_input("weight rounding '" + name + "' is not one of rtn, gptq, hqq");
}

const char* weight_rounding_name(WeightRounding r) {
  switch (r) {
    case WeightRounding::Rtn: return "rtn";
    case WeightRounding::Gptq: return "gptq";
    case WeightRounding::Hqq: return "hqq";
  }
  return "rtn";
}

float symmetric_scale(const float* w, int64_t n, SymmetricCodes codes) {
  float absmax = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(w[i])) absmax = std::max(absmax, std::fabs(w[i]));
  return std::max(absmax / codes.divisor, std::numeric_limits<float>::epsilon());
}

RoundedWeights round_groups(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes,
                            const std::function<float(const float*, int64_t)>& scale_of) {
  RoundedWeights r{rows, cols, group, std::vector<int8_t>(static_cast<size_t>(rows * cols)), {}};
  const int64_t groups = r.groups_per_row();
  r.scale.resize(static_cast<size_t>(rows * groups));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t c0 = g * group, c1 = std::min(cols, c0 + group);
      const float s = scale_of(w + i * cols + c0, c1 - c0);
      r.scale[static_cast<size_t>(i * groups + g)] = s;
      for (int64_t c = c0; c < c1; ++c) r.q[static_cast<size_t>(i * cols + c)] = round_code(w[i * cols + c], s, codes);
    }
  return r;
}

RoundedWeights round_to_nearest(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes) {
  return round_groups(w, rows, cols, group, codes, [&](const float* g, int64_t n) { return symmetric_scale(g, n, codes); });
}

}  // namespace quant::calib
