#include "libquant/calib/params.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstring>
#include <string>

#include "libquant/kernels/threadpool.h"
#include "libquant/kernels/weight_quant.h"

namespace quant::calib {
namespace {

// Smallest power of two >= s (s > 0, finite), kept within float32.
float power_of_two_at_least(float s) {
  int e = 0;
  double m = std::frexp(static_cast<double>(s), &e);  // s = m * 2^e, m in [0.5, 1)
  if (m == 0.5) return s;
  return static_cast<float>(std::ldexp(1.0, std::min(e, 127)));
}

// float32 scale of `real_range / steps`; 1 for a range with no usable width.
float scale_for(double real_range, double steps) {
  float s = static_cast<float>(real_range / steps);
  return (s > 0 && std::isfinite(s)) ? s : 1.0f;
}

struct SymmetricGrid {
  int32_t zero_point;  // 0 for signed types, the middle code for unsigned ones
  double steps;        // codes from the zero point to the top: absmax maps here
};

SymmetricGrid symmetric_grid(DType qtype) {
  auto r = int_range(qtype);
  assert(r && "symmetric_grid on a non-integer type");
  if (r->min < 0) return {0, static_cast<double>(r->max)};
  auto zp = static_cast<int32_t>((r->max + 1) / 2);
  return {zp, static_cast<double>(r->max - zp)};
}

float value_as_float(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Float16: {
      uint16_t h = t.data<uint16_t>()[i];
      int exp = (h >> 10) & 0x1F;
      int mant = h & 0x3FF;
      double v = exp == 0    ? std::ldexp(mant, -24)
                 : exp == 31 ? (mant ? NAN : INFINITY)
                             : std::ldexp(1024 + mant, exp - 25);
      return static_cast<float>((h & 0x8000) ? -v : v);
    }
    case DType::BFloat16: {
      uint32_t bits = uint32_t{t.data<uint16_t>()[i]} << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: return static_cast<float>(t.as_double(i));
  }
}

}  // namespace

Expected<Schema> schema_from_name(std::string_view name) {
  for (Schema s : {Schema::Asymmetric, Schema::Symmetric, Schema::SymmetricUInt8, Schema::Power2Scale})
    if (name == schema_name(s)) return s;
  return Status::bad_input("unknown schema '" + std::string(name) +
                           "' (valid: asymmetric, symmetric, symmetric-uint8, power2-scale)");
}

std::string_view schema_name(Schema schema) {
  switch (schema) {
    case Schema::Asymmetric: return "asymmetric";
    case Schema::Symmetric: return "symmetric";
    case Schema::SymmetricUInt8: return "symmetric-uint8";
    case Schema::Power2Scale: return "power2-scale";
  }
  return "asymmetric";
}

QuantParams choose_quant_params(Range range, Schema schema, DType precision) {
  auto limits = int_range(precision);
  assert(limits && "activation precision must be an integer type");
  QuantParams p;
  p.qtype = precision;
  double lo = std::isfinite(range.min) ? range.min : 0.0;
  double hi = std::isfinite(range.max) ? range.max : 0.0;

  if (schema == Schema::SymmetricUInt8 && lo >= 0 && dtype_size(precision) == 1) {
    p.qtype = DType::UInt8;
    p.scale = {scale_for(hi, 255)};
    p.zero_point = {0};
    return p;
  }
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (schema == Schema::Asymmetric) {
    const double qmin = static_cast<double>(limits->min), qmax = static_cast<double>(limits->max);
    float scale = scale_for(hi - lo, qmax - qmin);
    // nearbyint rounds half to even in the default rounding mode, as ONNX QuantizeLinear does.
    double zp = std::nearbyint(qmin - lo / static_cast<double>(scale));
    p.scale = {scale};
    p.zero_point = {static_cast<int32_t>(std::clamp(zp, qmin, qmax))};
    return p;
  }
  SymmetricGrid grid = symmetric_grid(precision);
  float scale = scale_for(std::max(-lo, hi), grid.steps);
  if (schema == Schema::Power2Scale) scale = power_of_two_at_least(scale);
  p.scale = {scale};
  p.zero_point = {grid.zero_point};
  return p;
}

QuantParams choose_weight_params(const Tensor& weights, int64_t axis, DType qtype, Schema schema, int32_t max_level,
                                 int threads) {
  assert(axis < weights.rank());
  QuantParams p;
  p.qtype = qtype;
  const int64_t channels = axis < 0 ? 1 : weights.dim(axis);
  int64_t inner = 1;  // elements per step of `axis`
  if (axis >= 0)
    for (int64_t d = axis + 1; d < weights.rank(); ++d) inner *= weights.dim(d);
  std::vector<double> absmax(static_cast<size_t>(std::max<int64_t>(channels, 1)), 0.0);
  if (weights.dtype() == DType::Float32 && weights.size() > 0) {
    // Over [outer, channels, inner] in memory order: the weights of a large
    // model are read once, streaming (DESIGN "Large models"). max(|v|) in
    // float is exact, so the result equals the general loop's; `a <= FLT_MAX`
    // skips NaN and Inf as isfinite does.
    const float* w = weights.data<float>();
    const int64_t ch = axis < 0 ? 1 : channels, in = axis < 0 ? weights.size() : inner;
    const int64_t outer = weights.size() / (ch * in);
    std::vector<float> m(static_cast<size_t>(ch), 0.0f);
    constexpr float kMax = std::numeric_limits<float>::max();
    if (in == 1) {
      // Channels along the last axis (MatMul weights [K, N]): one row at a
      // time (SSE2), the rows split over the threads, each part its own
      // maxima, then the maxima's max.
      const int64_t parts = std::clamp<int64_t>(threads, 1, std::max<int64_t>(outer, 1));
      std::vector<std::vector<float>> part_m(static_cast<size_t>(parts), std::vector<float>(static_cast<size_t>(ch), 0.0f));
      kernels::parallel_for(threads, parts, [&](int64_t t) {
        for (int64_t o = t * outer / parts; o < (t + 1) * outer / parts; ++o)
          kernels::absmax_update(w + o * ch, part_m[static_cast<size_t>(t)].data(), ch);
      });
      for (const auto& pm : part_m)
        for (size_t c = 0; c < m.size(); ++c) m[c] = std::max(m[c], pm[c]);
    }
    for (int64_t o = 0; o < outer && in != 1; ++o) {
      const float* block = w + o * ch * in;
      for (int64_t c = 0; c < ch; ++c) {
        float mc = m[static_cast<size_t>(c)];
        for (int64_t j = 0; j < in; ++j) {
          const float a = std::abs(block[c * in + j]);
          mc = a <= kMax && a > mc ? a : mc;
        }
        m[static_cast<size_t>(c)] = mc;
      }
    }
    for (size_t c = 0; c < m.size(); ++c) absmax[c] = m[c];
  } else {
    for (int64_t i = 0; i < weights.size(); ++i) {
      float v = value_as_float(weights, i);
      if (!std::isfinite(v)) continue;
      size_t c = axis < 0 ? 0 : static_cast<size_t>((i / inner) % channels);
      absmax[c] = std::max(absmax[c], static_cast<double>(std::abs(v)));
    }
  }
  SymmetricGrid grid = symmetric_grid(qtype);
  if (max_level > 0 && max_level < grid.steps) grid.steps = max_level;
  for (double m : absmax) {
    float scale = scale_for(m, grid.steps);
    if (schema == Schema::Power2Scale) scale = power_of_two_at_least(scale);
    p.scale.push_back(scale);
    p.zero_point.push_back(grid.zero_point);
  }
  if (axis >= 0) p.axis = axis;
  return p;
}

}  // namespace quant::calib
