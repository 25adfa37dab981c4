#include "libquant/kernels/qsoftmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace quant::kernels {

void qlinear_softmax_table(float x_scale, int64_t reduce, bool is_signed, float* table) {
  // float / size_t is a float division in ORT's source; log and exp are the double ones.
  const float headroom = std::numeric_limits<float>::max() / static_cast<float>(static_cast<uint64_t>(reduce));
  double shift = std::log(static_cast<double>(headroom));
  shift = std::max(0.0, shift - 5.0) / static_cast<double>(x_scale);
  for (int32_t i = 0; i < 256; ++i) {
    const double e = std::exp((static_cast<double>(i) - 255 + shift) * static_cast<double>(x_scale));
    table[static_cast<uint8_t>(is_signed ? i - 128 : i)] = static_cast<float>(e);
  }
}

template <class T>
void qlinear_softmax(const T* x, T* y, int64_t outer, int64_t reduce, int64_t inner, const float* table, float y_scale,
                     int32_t y_zero_point) {
  const float factor = std::floor(1.0f / y_scale);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const T* xr = x + o * reduce * inner + in;
      T* yr = y + o * reduce * inner + in;
      T xmax = xr[0];
      for (int64_t k = 1; k < reduce; ++k) xmax = std::max(xmax, xr[k * inner]);
      auto entry = [&](T v) {
        if constexpr (std::is_same_v<T, uint8_t>) return table[255 - xmax + v];
        else return table[static_cast<uint8_t>(127 - int32_t{xmax} + v)];
      };
      float sum = 0;
      for (int64_t k = 0; k < reduce; ++k) sum += entry(xr[k * inner]);
      if (sum == 0) continue;  // cannot happen (the maximum's entry is exp(shift * x_scale) > 0); ORT also skips
      for (int64_t k = 0; k < reduce; ++k) {
        const int32_t q = static_cast<int32_t>(std::nearbyint(entry(xr[k * inner]) * factor / sum)) + y_zero_point;
        if constexpr (std::is_same_v<T, uint8_t>) yr[k * inner] = static_cast<uint8_t>(std::min(q, 255));
        else yr[k * inner] = q > 255 ? static_cast<int8_t>(-1) : static_cast<int8_t>(q);
      }
    }
  }
}

template void qlinear_softmax<uint8_t>(const uint8_t*, uint8_t*, int64_t, int64_t, int64_t, const float*, float, int32_t);
template void qlinear_softmax<int8_t>(const int8_t*, int8_t*, int64_t, int64_t, int64_t, const float*, float, int32_t);

}  // namespace quant::kernels
