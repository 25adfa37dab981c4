#include "libquant/kernels/unary.h"

#include <cassert>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "libquant/kernels/cast.h"

namespace quant::kernels {
namespace {

template <class T, class F>
void map(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// Softplus without overflow: log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
template <class T>
T softplus(T v) {
  return (v > T{0} ? v : T{0}) + std::log1p(std::exp(-std::abs(v)));
}

template <class T>
T sigmoid(T v) {
  if (v >= T{0}) return T{1} / (T{1} + std::exp(-v));
  // exp(v) underflows to 0 for very negative v instead of exp(-v) overflowing;
  // NaN also takes this branch and propagates.
  const T e = std::exp(v);
  return e / (T{1} + e);
}

// The float ops, for T = float or double. Constants are cast once.
template <class T>
void unary_float(UnaryOp op, const T* x, T* y, int64_t n, const UnaryParams& p) {
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta), gamma = static_cast<T>(p.gamma);
  const T zero{0}, one{1};
  switch (op) {
    case UnaryOp::Abs: return map(x, y, n, [](T v) { return std::abs(v); });
    case UnaryOp::Neg: return map(x, y, n, [](T v) { return -v; });
    case UnaryOp::Floor: return map(x, y, n, [](T v) { return std::floor(v); });
    case UnaryOp::Ceil: return map(x, y, n, [](T v) { return std::ceil(v); });
    case UnaryOp::Round: return map(x, y, n, [](T v) { return std::nearbyint(v); });
    case UnaryOp::Sign: return map(x, y, n, [](T v) { return static_cast<T>((v > T{0}) - (v < T{0})); });
    case UnaryOp::Sqrt: return map(x, y, n, [](T v) { return std::sqrt(v); });
    case UnaryOp::Reciprocal: return map(x, y, n, [](T v) { return T{1} / v; });
    case UnaryOp::Exp: return map(x, y, n, [](T v) { return std::exp(v); });
    case UnaryOp::Log: return map(x, y, n, [](T v) { return std::log(v); });
    case UnaryOp::Tanh: return map(x, y, n, [](T v) { return std::tanh(v); });
    case UnaryOp::Erf: return map(x, y, n, [](T v) { return std::erf(v); });
    case UnaryOp::Sin: return map(x, y, n, [](T v) { return std::sin(v); });
    case UnaryOp::Cos: return map(x, y, n, [](T v) { return std::cos(v); });
    case UnaryOp::Tan: return map(x, y, n, [](T v) { return std::tan(v); });
    case UnaryOp::Asin: return map(x, y, n, [](T v) { return std::asin(v); });
    case UnaryOp::Acos: return map(x, y, n, [](T v) { return std::acos(v); });
    case UnaryOp::Atan: return map(x, y, n, [](T v) { return std::atan(v); });
    case UnaryOp::Sinh: return map(x, y, n, [](T v) { return std::sinh(v); });
    case UnaryOp::Cosh: return map(x, y, n, [](T v) { return std::cosh(v); });
    case UnaryOp::Asinh: return map(x, y, n, [](T v) { return std::asinh(v); });
    case UnaryOp::Acosh: return map(x, y, n, [](T v) { return std::acosh(v); });
    case UnaryOp::Atanh: return map(x, y, n, [](T v) { return std::atanh(v); });
    case UnaryOp::Softplus: return map(x, y, n, [](T v) { return softplus(v); });
    case UnaryOp::Softsign: return map(x, y, n, [](T v) { return v / (T{1} + std::abs(v)); });
    // A compare rather than std::max so that NaN propagates (numpy's maximum does).
    case UnaryOp::Relu: return map(x, y, n, [](T v) { return v < T{0} ? T{0} : v; });
    case UnaryOp::Sigmoid: return map(x, y, n, [](T v) { return sigmoid(v); });
    case UnaryOp::Mish: return map(x, y, n, [](T v) { return v * std::tanh(softplus(v)); });
    case UnaryOp::LeakyRelu: return map(x, y, n, [=](T v) { return v < zero ? alpha * v : v; });
    case UnaryOp::Elu: return map(x, y, n, [=](T v) { return v < zero ? alpha * std::expm1(v) : v; });
    case UnaryOp::Selu: return map(x, y, n, [=](T v) { return gamma * (v <= zero ? alpha * std::expm1(v) : v); });
    case UnaryOp::Celu:
      return map(x, y, n, [=](T v) { return v > zero ? v : alpha * std::expm1(v / alpha); });
    case UnaryOp::ThresholdedRelu: return map(x, y, n, [=](T v) { return v > alpha ? v : zero; });
    case UnaryOp::Shrink:
      return map(x, y, n, [=](T v) { return v < -alpha ? v + beta : (v > alpha ? v - beta : zero); });
    case UnaryOp::HardSigmoid:
      return map(x, y, n, [=](T v) {
        const T s = alpha * v + beta;
        return s < zero ? zero : (s > one ? one : s);
      });
    case UnaryOp::HardSwish:
      return map(x, y, n, [=](T v) {
        const T s = v / T{6} + T{0.5};
        return v * (s < zero ? zero : (s > one ? one : s));
      });
    case UnaryOp::GeluErf:
      return map(x, y, n, [](T v) { return T{0.5} * v * (T{1} + std::erf(v / std::numbers::sqrt2_v<T>)); });
    case UnaryOp::GeluTanh: {
      const T k = std::numbers::sqrt2_v<T> * std::numbers::inv_sqrtpi_v<T>;  // sqrt(2/pi)
      return map(x, y, n, [=](T v) { return T{0.5} * v * (T{1} + std::tanh(k * (v + T{0.044715} * v * v * v))); });
    }
  }
  assert(false && "unknown UnaryOp");
}

// Integers: the exact ops natively, the others through double.
template <class T>
void unary_int(UnaryOp op, const T* x, T* y, int64_t n, const UnaryParams& p) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case UnaryOp::Abs:
      if constexpr (std::is_signed_v<T>)
        return map(x, y, n, [](T v) { return v < 0 ? static_cast<T>(U{0} - static_cast<U>(v)) : v; });
      else
        return map(x, y, n, [](T v) { return v; });
    case UnaryOp::Neg: return map(x, y, n, [](T v) { return static_cast<T>(U{0} - static_cast<U>(v)); });
    case UnaryOp::Sign: return map(x, y, n, [](T v) { return static_cast<T>((v > T{0}) - (v < T{0})); });
    case UnaryOp::Relu: return map(x, y, n, [](T v) { return v < T{0} ? T{0} : v; });
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round: return map(x, y, n, [](T v) { return v; });
    default:
      for (int64_t i = 0; i < n; ++i) {
        double v = static_cast<double>(x[i]);
        unary_float<double>(op, &v, &v, 1, p);
        y[i] = saturate_trunc<T>(v);
      }
      return;
  }
}

}  // namespace

template <class T>
void unary(UnaryOp op, const T* x, T* y, int64_t n, const UnaryParams& p) {
  if constexpr (std::is_floating_point_v<T>)
    unary_float(op, x, y, n, p);
  else
    unary_int(op, x, y, n, p);
}

template <class T>
void clip(const T* x, T* y, int64_t n, T lo, T hi) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

template <class T>
void is_nan(const T* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(x[i]) ? 1 : 0;
}

template <class T>
void is_inf(const T* x, uint8_t* y, int64_t n, bool detect_negative, bool detect_positive) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    y[i] = std::isinf(v) && (v > 0 ? detect_positive : detect_negative) ? 1 : 0;
  }
}

void logical_not(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] ? 0 : 1;
}

#define QT_UNARY_INSTANTIATE(T)                                                       \
  template void unary<T>(UnaryOp, const T*, T*, int64_t, const UnaryParams&);        \
  template void clip<T>(const T*, T*, int64_t, T, T);
QT_UNARY_INSTANTIATE(float)
QT_UNARY_INSTANTIATE(double)
QT_UNARY_INSTANTIATE(int8_t)
QT_UNARY_INSTANTIATE(uint8_t)
QT_UNARY_INSTANTIATE(int16_t)
QT_UNARY_INSTANTIATE(uint16_t)
QT_UNARY_INSTANTIATE(int32_t)
QT_UNARY_INSTANTIATE(uint32_t)
QT_UNARY_INSTANTIATE(int64_t)
QT_UNARY_INSTANTIATE(uint64_t)
#undef QT_UNARY_INSTANTIATE

template void is_nan<float>(const float*, uint8_t*, int64_t);
template void is_nan<double>(const double*, uint8_t*, int64_t);
template void is_inf<float>(const float*, uint8_t*, int64_t, bool, bool);
template void is_inf<double>(const double*, uint8_t*, int64_t, bool, bool);

}  // namespace quant::kernels
