#include "libquant/kernels/requant.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace quant::kernels {

int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  if (a == kMin && b == kMin) return std::numeric_limits<int32_t>::max();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
}

int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  assert(exponent >= 0 && exponent <= 31);
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

FixedPointMultiplier quantize_multiplier(double m) {
  if (!(m > 0.0) || !std::isfinite(m)) return {};
  int shift = 0;
  const double q = std::frexp(m, &shift);
  int64_t q_fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  assert(q_fixed <= (int64_t{1} << 31));
  if (q_fixed == (int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {};
  if (shift > 30) return {std::numeric_limits<int32_t>::max(), 30};
  return {static_cast<int32_t>(q_fixed), shift};
}

int32_t multiply_by_quantized_multiplier(int32_t x, FixedPointMultiplier m) {
  const int left = m.shift > 0 ? m.shift : 0;
  const int right = m.shift > 0 ? 0 : -m.shift;
  const int64_t shifted = static_cast<int64_t>(x) * (int64_t{1} << left);
  const int32_t input = static_cast<int32_t>(std::clamp<int64_t>(shifted, std::numeric_limits<int32_t>::min(),
                                                                 std::numeric_limits<int32_t>::max()));
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(input, m.multiplier), right);
}

int32_t multiply_by_quantized_multiplier_wide(int64_t x, FixedPointMultiplier m) {
  __extension__ typedef __int128 int128;  // x * reduced needs 63 bits at most; int128 keeps every shift defined
  constexpr int64_t kLimit = int64_t{1} << 47;
  x = std::clamp<int64_t>(x, -kLimit, kLimit - 1);
  const int64_t reduced = m.multiplier < 0x7FFF0000 ? (int64_t{m.multiplier} + (1 << 15)) >> 16 : 0x7FFF;
  const int total = 15 - m.shift;
  int128 v = static_cast<int128>(x) * reduced;
  if (total > 0) v = (v + (static_cast<int128>(1) << (total - 1))) >> total;
  else v = v * (static_cast<int128>(1) << -total);
  return static_cast<int32_t>(std::clamp<int128>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

Requantizer make_requantizer(RequantMode mode, std::span<const double> multipliers, int32_t zero_point) {
  Requantizer r;
  r.mode = mode;
  r.zero_point = zero_point;
  for (double m : multipliers) {
    if (mode == RequantMode::Float) r.scale.push_back(static_cast<float>(m));
    else r.fixed.push_back(quantize_multiplier(m));
  }
  return r;
}

Requantizer make_requantizer(RequantMode mode, std::span<const float> multipliers, int32_t zero_point) {
  Requantizer r;
  r.mode = mode;
  r.zero_point = zero_point;
  if (mode == RequantMode::Float) {
    r.scale.assign(multipliers.begin(), multipliers.end());
  } else {
    for (float m : multipliers) r.fixed.push_back(quantize_multiplier(static_cast<double>(m)));
  }
  return r;
}

template <class Q>
Q requantize_one(int32_t acc, const Requantizer& r, int64_t channel) {
  const auto [lo, hi] = output_range<Q>(r);
  const size_t c = r.count() == 1 ? 0 : static_cast<size_t>(channel);
  if (r.mode == RequantMode::Float) {
    // MLAS MlasRequantizeOutput: scale in float32, clamp to the output range
    // shifted by the zero point, round half to even, add the zero point.
    float v = static_cast<float>(acc) * r.scale[c];
    if (std::isnan(v)) v = 0.0f;  // 0 * inf from a non-finite multiplier: callers refuse those, this keeps it defined
    v = std::min(std::max(v, static_cast<float>(lo - r.zero_point)), static_cast<float>(hi - r.zero_point));
    return static_cast<Q>(static_cast<int32_t>(std::nearbyint(v)) + r.zero_point);
  }
  const int64_t v = static_cast<int64_t>(multiply_by_quantized_multiplier(acc, r.fixed[c])) + r.zero_point;
  return static_cast<Q>(std::clamp<int64_t>(v, lo, hi));
}

template <class Q>
void requantize(const int32_t* acc, int64_t rows, int64_t cols, int64_t acc_row_stride, const int32_t* bias,
                const Requantizer& r, int64_t first_channel, Q* y, int64_t y_row_stride, int64_t y_col_stride) {
  assert(r.count() == 1 || static_cast<int64_t>(r.count()) >= first_channel + cols);
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t* a = acc + i * acc_row_stride;
    Q* out = y + i * y_row_stride;
    for (int64_t j = 0; j < cols; ++j) {
      const uint32_t b = bias ? static_cast<uint32_t>(bias[j]) : 0u;
      const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(a[j]) + b);
      out[j * y_col_stride] = requantize_one<Q>(v, r, first_channel + j);
    }
  }
}

template <class Q>
Q requantize_one_wide(int64_t acc, const Requantizer& r, int64_t channel) {
  const auto [lo, hi] = output_range<Q>(r);
  const size_t c = r.count() == 1 ? 0 : static_cast<size_t>(channel);
  int64_t v = 0;
  if (r.mode == RequantMode::Float) {
    const float f = static_cast<float>(acc) * r.scale[c];
    v = std::isnan(f) ? 0 : static_cast<int64_t>(std::nearbyint(std::clamp(f, -2.0e9f, 2.0e9f)));
  } else {
    v = multiply_by_quantized_multiplier_wide(acc, r.fixed[c]);
  }
  return static_cast<Q>(std::clamp<int64_t>(v + r.zero_point, lo, hi));
}

template <class Q>
void requantize_wide(const int64_t* acc, int64_t rows, int64_t cols, int64_t acc_row_stride, const int32_t* bias,
                     const Requantizer& r, int64_t first_channel, Q* y, int64_t y_row_stride, int64_t y_col_stride) {
  assert(r.count() == 1 || static_cast<int64_t>(r.count()) >= first_channel + cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t v = acc[i * acc_row_stride + j] + (bias ? bias[j] : 0);
      y[i * y_row_stride + j * y_col_stride] = requantize_one_wide<Q>(v, r, first_channel + j);
    }
}

#define QT_INSTANTIATE_REQUANT(Q)                                                                                \
  template Q requantize_one<Q>(int32_t, const Requantizer&, int64_t);                                           \
  template void requantize<Q>(const int32_t*, int64_t, int64_t, int64_t, const int32_t*, const Requantizer&, \
                              int64_t, Q*, int64_t, int64_t);                                                   \
  template Q requantize_one_wide<Q>(int64_t, const Requantizer&, int64_t);                                      \
  template void requantize_wide<Q>(const int64_t*, int64_t, int64_t, int64_t, const int32_t*, const Requantizer&, \
                                   int64_t, Q*, int64_t, int64_t);
QT_INSTANTIATE_REQUANT(uint8_t)
QT_INSTANTIATE_REQUANT(int8_t)
QT_INSTANTIATE_REQUANT(uint16_t)
QT_INSTANTIATE_REQUANT(int16_t)
#undef QT_INSTANTIATE_REQUANT

}  // namespace quant::kernels
