#include "libquant/kernels/elementwise.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "libquant/kernels/broadcast.h"
#include "libquant/kernels/cast.h"
#include "libquant/kernels/unary.h"

namespace quant::kernels {
namespace {

// Integer arithmetic done in the unsigned type so that overflow wraps instead
// of being undefined behaviour.
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  // Promote to at least unsigned int: uint16 * uint16 would otherwise be
  // computed in (signed) int and could overflow.
  using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T>
T int_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (b == -1) return wrap_sub(T{0}, a);  // INT_MIN / -1 wraps to INT_MIN
  return static_cast<T>(a / b);
}
// Truncated remainder (sign of a), defined for b == 0 and INT_MIN % -1.
template <class T>
T int_rem(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (b == -1) return 0;
  return static_cast<T>(a % b);
}

template <class T>
struct Arith {
  static constexpr bool kInt = std::is_integral_v<T>;
  static T add(T a, T b) {
    if constexpr (kInt) return wrap_add(a, b);
    else return a + b;
  }
  static T sub(T a, T b) {
    if constexpr (kInt) return wrap_sub(a, b);
    else return a - b;
  }
  static T mul(T a, T b) {
    if constexpr (kInt) return wrap_mul(a, b);
    else return a * b;
  }
  static T div(T a, T b) {
    if constexpr (kInt) return int_div(a, b);
    else return a / b;
  }
  static T fmod(T a, T b) {
    if constexpr (kInt) return int_rem(a, b);
    else return std::fmod(a, b);
  }
  // Floored modulo: the remainder moved to the divisor's side of zero.
  static T mod(T a, T b) {
    const T r = fmod(a, b);
    if constexpr (std::is_unsigned_v<T>) {
      return r;
    } else {
      if (r != T{0} && ((r < T{0}) != (b < T{0}))) return add(r, b);
      return r;
    }
  }
  static T min(T a, T b) {
    if constexpr (kInt) return a < b ? a : b;
    else return (a < b || std::isnan(a)) ? a : b;
  }
  static T max(T a, T b) {
    if constexpr (kInt) return a > b ? a : b;
    else return (a > b || std::isnan(a)) ? a : b;
  }
  static T prelu(T x, T slope) { return x < T{0} ? mul(x, slope) : x; }
};

template <class T>
void binary_dispatch(BinaryOp op, const T* a, std::span<const int64_t> as, const T* b, std::span<const int64_t> bs,
                     T* y, std::span<const int64_t> ys) {
  using A = Arith<T>;
  // Lambdas rather than &A::add: each instantiates the loop with the op
  // inlined instead of an indirect call per element.
  switch (op) {
    case BinaryOp::Add: return broadcast_binary([](T p, T q) { return A::add(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Sub: return broadcast_binary([](T p, T q) { return A::sub(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Mul: return broadcast_binary([](T p, T q) { return A::mul(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Div: return broadcast_binary([](T p, T q) { return A::div(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Mod: return broadcast_binary([](T p, T q) { return A::mod(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::FMod: return broadcast_binary([](T p, T q) { return A::fmod(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Min: return broadcast_binary([](T p, T q) { return A::min(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::Max: return broadcast_binary([](T p, T q) { return A::max(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::PRelu: return broadcast_binary([](T p, T q) { return A::prelu(p, q); }, a, as, b, bs, y, ys);
    case BinaryOp::BitShiftLeft:
    case BinaryOp::BitShiftRight:
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        constexpr U kBits = sizeof(T) * 8;
        switch (op) {
          case BinaryOp::BitShiftLeft:
            return broadcast_binary(
                [](T v, T s) { return static_cast<U>(s) >= kBits ? T{0} : static_cast<T>(static_cast<U>(v) << s); },
                a, as, b, bs, y, ys);
          case BinaryOp::BitShiftRight:
            return broadcast_binary(
                [](T v, T s) { return static_cast<U>(s) >= kBits ? T{0} : static_cast<T>(static_cast<U>(v) >> s); }, a,
                as, b, bs, y, ys);
          case BinaryOp::And:
            return broadcast_binary([](T p, T q) { return T(p != 0 && q != 0); }, a, as, b, bs, y, ys);
          case BinaryOp::Or:
            return broadcast_binary([](T p, T q) { return T(p != 0 || q != 0); }, a, as, b, bs, y, ys);
          case BinaryOp::Xor:
            return broadcast_binary([](T p, T q) { return T((p != 0) != (q != 0)); }, a, as, b, bs, y, ys);
          default:
            break;
        }
      }
      break;
  }
  assert(false && "BinaryOp not defined for this element type");
}

// Exact integer power with wrap-around; see pow_broadcast in the header.
template <class TB, class TE>
TB int_pow(TB base, TE e) {
  if constexpr (std::is_signed_v<TE>) {
    if (e < 0) {
      if (base == 1) return 1;
      if (base == -1) return (e % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  using U = std::common_type_t<std::make_unsigned_t<TB>, unsigned>;  // no promotion to signed int
  U result = 1, b = static_cast<U>(base);
  auto n = static_cast<std::make_unsigned_t<TE>>(e);
  while (n) {
    if (n & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    n >>= 1;
  }
  return static_cast<TB>(result);
}

template <class TB, class TE>
TB pow_value(TB base, TE e) {
  if constexpr (std::is_integral_v<TB> && std::is_integral_v<TE>) {
    return int_pow(base, e);
  } else {
    const double r = std::pow(static_cast<double>(base), static_cast<double>(e));
    if constexpr (std::is_floating_point_v<TB>) return static_cast<TB>(r);
    else return saturate_trunc<TB>(r);
  }
}

template <class T>
void where_typed(const uint8_t* c, std::span<const int64_t> cs, const void* x, std::span<const int64_t> xs,
                 const void* y, std::span<const int64_t> ys, void* out, std::span<const int64_t> os) {
  broadcast_ternary([](uint8_t p, T a, T b) { return p ? a : b; }, c, cs, static_cast<const T*>(x), xs,
                    static_cast<const T*>(y), ys, static_cast<T*>(out), os);
}

}  // namespace

template <class T>
void binary_broadcast(BinaryOp op, const T* a, std::span<const int64_t> a_shape, const T* b,
                      std::span<const int64_t> b_shape, T* y, std::span<const int64_t> y_shape) {
  binary_dispatch(op, a, a_shape, b, b_shape, y, y_shape);
}

template <class T>
void compare_broadcast(CompareOp op, const T* a, std::span<const int64_t> as, const T* b,
                       std::span<const int64_t> bs, uint8_t* y, std::span<const int64_t> ys) {
  switch (op) {
    case CompareOp::Equal: return broadcast_binary([](T p, T q) { return uint8_t(p == q); }, a, as, b, bs, y, ys);
    case CompareOp::Less: return broadcast_binary([](T p, T q) { return uint8_t(p < q); }, a, as, b, bs, y, ys);
    case CompareOp::Greater: return broadcast_binary([](T p, T q) { return uint8_t(p > q); }, a, as, b, bs, y, ys);
    case CompareOp::LessOrEqual: return broadcast_binary([](T p, T q) { return uint8_t(p <= q); }, a, as, b, bs, y, ys);
    case CompareOp::GreaterOrEqual:
      return broadcast_binary([](T p, T q) { return uint8_t(p >= q); }, a, as, b, bs, y, ys);
  }
  assert(false && "unknown CompareOp");
}

template <class TB, class TE>
void pow_broadcast(const TB* base, std::span<const int64_t> base_shape, const TE* exponent,
                   std::span<const int64_t> exponent_shape, TB* y, std::span<const int64_t> y_shape) {
  broadcast_binary([](TB p, TE e) { return pow_value(p, e); }, base, base_shape, exponent, exponent_shape, y, y_shape);
}

void where_broadcast(const uint8_t* cond, std::span<const int64_t> cond_shape, const void* x,
                     std::span<const int64_t> x_shape, const void* y, std::span<const int64_t> y_shape, void* out,
                     std::span<const int64_t> out_shape, size_t elem_size) {
  switch (elem_size) {
    case 1: return where_typed<uint8_t>(cond, cond_shape, x, x_shape, y, y_shape, out, out_shape);
    case 2: return where_typed<uint16_t>(cond, cond_shape, x, x_shape, y, y_shape, out, out_shape);
    case 4: return where_typed<uint32_t>(cond, cond_shape, x, x_shape, y, y_shape, out, out_shape);
    case 8: return where_typed<uint64_t>(cond, cond_shape, x, x_shape, y, y_shape, out, out_shape);
  }
  assert(false && "where_broadcast: element size must be 1, 2, 4 or 8");
}

void relu_f32(const float* x, float* y, int64_t n) { unary<float>(UnaryOp::Relu, x, y, n); }

void clip_f32(const float* x, float* y, int64_t n, float lo, float hi) { clip<float>(x, y, n, lo, hi); }

#define QT_BINARY_INSTANTIATE(T)                                                                                    \
  template void binary_broadcast<T>(BinaryOp, const T*, std::span<const int64_t>, const T*,                        \
                                    std::span<const int64_t>, T*, std::span<const int64_t>);                       \
  template void compare_broadcast<T>(CompareOp, const T*, std::span<const int64_t>, const T*,                      \
                                     std::span<const int64_t>, uint8_t*, std::span<const int64_t>);
#define QT_POW_INSTANTIATE(TB, TE)                                                                                  \
  template void pow_broadcast<TB, TE>(const TB*, std::span<const int64_t>, const TE*, std::span<const int64_t>, TB*, \
                                      std::span<const int64_t>);
#define QT_POW_EXPONENTS(TB)                                                                                        \
  QT_POW_INSTANTIATE(TB, float) QT_POW_INSTANTIATE(TB, double) QT_POW_INSTANTIATE(TB, int8_t)                       \
  QT_POW_INSTANTIATE(TB, uint8_t) QT_POW_INSTANTIATE(TB, int16_t) QT_POW_INSTANTIATE(TB, uint16_t)                  \
  QT_POW_INSTANTIATE(TB, int32_t) QT_POW_INSTANTIATE(TB, uint32_t) QT_POW_INSTANTIATE(TB, int64_t)                  \
  QT_POW_INSTANTIATE(TB, uint64_t)

QT_BINARY_INSTANTIATE(float)
QT_BINARY_INSTANTIATE(double)
QT_BINARY_INSTANTIATE(int8_t)
QT_BINARY_INSTANTIATE(uint8_t)
QT_BINARY_INSTANTIATE(int16_t)
QT_BINARY_INSTANTIATE(uint16_t)
QT_BINARY_INSTANTIATE(int32_t)
QT_BINARY_INSTANTIATE(uint32_t)
QT_BINARY_INSTANTIATE(int64_t)
QT_BINARY_INSTANTIATE(uint64_t)
QT_POW_EXPONENTS(float)
QT_POW_EXPONENTS(double)
QT_POW_EXPONENTS(int32_t)
QT_POW_EXPONENTS(int64_t)
#undef QT_POW_EXPONENTS
#undef QT_POW_INSTANTIATE
#undef QT_BINARY_INSTANTIATE

}  // namespace quant::kernels
