#include "libquant/kernels/qlinear_eltwise.h"

#include <cmath>
#include <limits>

namespace quant::kernels {
namespace {

// cvtps2dq (round half to even) followed by packssdw / packuswb: saturation
// to int16 first changes nothing for 8-bit targets, so one clamp suffices.
template <class T>
T round_saturate(float v) {
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const float r = std::nearbyint(v);
  return static_cast<T>(r < lo ? lo : (r > hi ? hi : r));
}

}  // namespace

template <class T>
void qlinear_add(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ra = p.a_scale / p.c_scale;
  const float rb = p.b_scale / p.c_scale;
  const float base = static_cast<float>(p.c_zero_point) -
                     (ra * static_cast<float>(p.a_zero_point) + rb * static_cast<float>(p.b_zero_point));
  if (b_is_scalar) {
    const float product = static_cast<float>(b[0]) * rb;
    const float fixed = base + product;
    for (int64_t i = 0; i < n; ++i) c[i] = round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, fixed));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float partial = std::fma(static_cast<float>(b[i]), rb, base);
    c[i] = round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, partial));
  }
}

template <class T>
void qlinear_mul(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ratio = p.a_scale * p.b_scale / p.c_scale;
  const float zc = static_cast<float>(p.c_zero_point);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t bv = static_cast<int32_t>(b[b_is_scalar ? 0 : i]) - p.b_zero_point;
    const int32_t product = (static_cast<int32_t>(a[i]) - p.a_zero_point) * bv;
    const float scaled = static_cast<float>(product) * ratio;
    c[i] = round_saturate<T>(scaled + zc);
  }
}

template void qlinear_add<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_add<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_mul<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_mul<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);

}  // namespace quant::kernels
