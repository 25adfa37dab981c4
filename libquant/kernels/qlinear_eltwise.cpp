#include "libquant/kernels/qlinear_eltwise.h"

#include <cmath>
#include <limits>

namespace quant::kernels {

template <class T>
T mlas_round_saturate(float v) {
  // cvtps2dq returns the "integer indefinite" 0x80000000 for NaN and for
  // anything that does not fit int32; packing saturates that to T's minimum.
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<T>::min();
  const float r = std::nearbyint(v);  // round half to even in the default rounding mode, as cvtps2dq
  return static_cast<T>(r < lo ? lo : (r > hi ? hi : r));
}

template <class T>
void qlinear_add(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ra = p.a_scale / p.c_scale;
  const float rb = p.b_scale / p.c_scale;
  // std::fma spells out the contraction of ONNX Runtime's build (see the header).
  const float b_part = rb * static_cast<float>(p.b_zero_point);
  const float base = static_cast<float>(p.c_zero_point) - std::fma(ra, static_cast<float>(p.a_zero_point), b_part);
  if (b_is_scalar) {
    const float fixed = std::fma(static_cast<float>(b[0]), rb, base);
    for (int64_t i = 0; i < n; ++i) c[i] = mlas_round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, fixed));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float partial = std::fma(static_cast<float>(b[i]), rb, base);
    c[i] = mlas_round_saturate<T>(std::fma(static_cast<float>(a[i]), ra, partial));
  }
}

template <class T>
void qlinear_mul(const T* a, const T* b, bool b_is_scalar, T* c, int64_t n, const QLinearBinaryParams& p) {
  const float ratio = p.a_scale * p.b_scale / p.c_scale;
  const float zc = static_cast<float>(p.c_zero_point);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t bv = static_cast<int32_t>(b[b_is_scalar ? 0 : i]) - p.b_zero_point;
    const int32_t product = (static_cast<int32_t>(a[i]) - p.a_zero_point) * bv;
    // Two roundings, no fma: the library is built for baseline x86-64, so the
    // compiler cannot contract this, matching qlmul.cpp's SSE2 mul then add.
    const float scaled = static_cast<float>(product) * ratio;
    c[i] = mlas_round_saturate<T>(scaled + zc);
  }
}

template uint8_t mlas_round_saturate<uint8_t>(float);
template int8_t mlas_round_saturate<int8_t>(float);
template void qlinear_add<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_add<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_mul<uint8_t>(const uint8_t*, const uint8_t*, bool, uint8_t*, int64_t, const QLinearBinaryParams&);
template void qlinear_mul<int8_t>(const int8_t*, const int8_t*, bool, int8_t*, int64_t, const QLinearBinaryParams&);

}  // namespace quant::kernels
