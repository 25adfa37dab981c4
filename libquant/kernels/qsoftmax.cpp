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

namespace {

// ORT's `static_cast<int>(std::nearbyintf(v)) + y_zero_point` (int8) and
// `static_cast<uint32_t>(std::nearbyintf(v)) + y_zero_point` (uint8) as its
// x86 build computes them, written out so that they are defined here. The
// product exp * floor(1 / y_scale) overflows to +inf when a row is short and
// y_scale small (a length-1 row with floor(1 / y_scale) >= 149). int8:
// cvttss2si gives INT32_MIN out of range, the int32 addition wraps. uint8: the
// conversion is a 64-bit cvttss2si truncated to 32 bits (0 for inf and NaN).
int32_t round_add_int8(float v, int32_t zero_point) {
  const float r = std::nearbyint(v);
  const int32_t i = (r >= -2147483648.0f && r < 2147483648.0f) ? static_cast<int32_t>(r)
                                                                : std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(i) + static_cast<uint32_t>(zero_point));
}

uint32_t round_add_uint8(float v, int32_t zero_point) {
  const float r = std::nearbyint(v);
  const int64_t i = (r >= -9223372036854775808.0f && r < 9223372036854775808.0f) ? static_cast<int64_t>(r)
                                                                                  : std::numeric_limits<int64_t>::min();
  return static_cast<uint32_t>(static_cast<uint64_t>(i)) + static_cast<uint32_t>(zero_point);
}

}  // namespace

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
        const float v = entry(xr[k * inner]) * factor / sum;
        if constexpr (std::is_same_v<T, uint8_t>) {
          const uint32_t q = round_add_uint8(v, y_zero_point);
          yr[k * inner] = q > 255 ? uint8_t{255} : static_cast<uint8_t>(q);
        } else {
          const int32_t q = round_add_int8(v, y_zero_point);
          yr[k * inner] = q > 255 ? static_cast<int8_t>(-1) : static_cast<int8_t>(q);  // wraps like ORT's cast
        }
      }
    }
  }
}

template void qlinear_softmax<uint8_t>(const uint8_t*, uint8_t*, int64_t, int64_t, int64_t, const float*, float, int32_t);
template void qlinear_softmax<int8_t>(const int8_t*, int8_t*, int64_t, int64_t, int64_t, const float*, float, int32_t);

}  // namespace quant::kernels
