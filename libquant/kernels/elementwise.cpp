#include "libquant/kernels/elementwise.h"

#include <cassert>
#include <cmath>
#include <type_traits>

#include "libquant/kernels/shape_util.h"

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
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T>
T int_div(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(T{0}, a);  // INT_MIN / -1 wraps to INT_MIN
  return a / b;
}

template <class T>
struct AddOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return wrap_add(a, b);
    else
      return a + b;
  }
};
template <class T>
struct SubOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return wrap_sub(a, b);
    else
      return a - b;
  }
};
template <class T>
struct MulOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return wrap_mul(a, b);
    else
      return a * b;
  }
};
template <class T>
struct DivOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return int_div(a, b);
    else
      return a / b;
  }
};

// Extent of dimension d of a shape right-aligned against a rank-`rank` output.
int64_t aligned_dim(std::span<const int64_t> shape, size_t rank, size_t d) {
  const size_t lead = rank - shape.size();
  return d < lead ? 1 : shape[d - lead];
}

struct BroadcastShapes {
  std::span<const int64_t> a, b, y;
};

// Walks output dimension d and below. *_block is the element count of the
// sub-tensor spanned by dimensions d.. of each operand, from which the stride
// of dimension d follows without a stride table (so nothing is allocated).
template <class T, class F>
void broadcast_rec(F f, const BroadcastShapes& s, size_t d, const T* a, int64_t a_block, const T* b, int64_t b_block,
                   T* y, int64_t y_block) {
  // Flat tails: the rest of each operand is either the whole tail or a scalar.
  const bool a_full = a_block == y_block, b_full = b_block == y_block;
  if (a_full && b_full) {
    for (int64_t i = 0; i < y_block; ++i) y[i] = f(a[i], b[i]);
    return;
  }
  if (a_full && b_block == 1) {
    const T bv = *b;
    for (int64_t i = 0; i < y_block; ++i) y[i] = f(a[i], bv);
    return;
  }
  if (a_block == 1 && b_full) {
    const T av = *a;
    for (int64_t i = 0; i < y_block; ++i) y[i] = f(av, b[i]);
    return;
  }
  if (a_block == 1 && b_block == 1) {
    const T v = f(*a, *b);
    for (int64_t i = 0; i < y_block; ++i) y[i] = v;
    return;
  }
  // Not a flat tail, so at least one more dimension remains below d.
  const size_t rank = s.y.size();
  assert(d + 1 < rank);
  const int64_t n = s.y[d];
  const int64_t ad = aligned_dim(s.a, rank, d), bd = aligned_dim(s.b, rank, d);
  const int64_t a_sub = a_block / ad, b_sub = b_block / bd, y_sub = y_block / n;
  const int64_t a_step = ad == 1 ? 0 : a_sub, b_step = bd == 1 ? 0 : b_sub;
  for (int64_t i = 0; i < n; ++i) {
    broadcast_rec(f, s, d + 1, a + i * a_step, a_sub, b + i * b_step, b_sub, y + i * y_sub, y_sub);
  }
}

template <class T, class F>
void binary_apply(F f, const T* a, std::span<const int64_t> a_shape, const T* b, std::span<const int64_t> b_shape, T* y,
                  std::span<const int64_t> y_shape) {
  const int64_t y_count = element_count(y_shape);
  if (y_count == 0) return;
  assert(a_shape.size() <= y_shape.size() && b_shape.size() <= y_shape.size());
  const BroadcastShapes s{a_shape, b_shape, y_shape};
  // Equal shapes and scalar operands are caught by the flat-tail checks on
  // entry, before any per-dimension work.
  broadcast_rec(f, s, 0, a, element_count(a_shape), b, element_count(b_shape), y, y_count);
}

}  // namespace

template <class T>
void binary_broadcast(BinaryOp op, const T* a, std::span<const int64_t> a_shape, const T* b,
                      std::span<const int64_t> b_shape, T* y, std::span<const int64_t> y_shape) {
  switch (op) {
    case BinaryOp::Add:
      binary_apply(AddOp<T>{}, a, a_shape, b, b_shape, y, y_shape);
      return;
    case BinaryOp::Sub:
      binary_apply(SubOp<T>{}, a, a_shape, b, b_shape, y, y_shape);
      return;
    case BinaryOp::Mul:
      binary_apply(MulOp<T>{}, a, a_shape, b, b_shape, y, y_shape);
      return;
    case BinaryOp::Div:
      binary_apply(DivOp<T>{}, a, a_shape, b, b_shape, y, y_shape);
      return;
  }
  assert(false && "unknown BinaryOp");
}

template void binary_broadcast<float>(BinaryOp, const float*, std::span<const int64_t>, const float*,
                                      std::span<const int64_t>, float*, std::span<const int64_t>);
template void binary_broadcast<double>(BinaryOp, const double*, std::span<const int64_t>, const double*,
                                       std::span<const int64_t>, double*, std::span<const int64_t>);
template void binary_broadcast<int32_t>(BinaryOp, const int32_t*, std::span<const int64_t>, const int32_t*,
                                        std::span<const int64_t>, int32_t*, std::span<const int64_t>);
template void binary_broadcast<int64_t>(BinaryOp, const int64_t*, std::span<const int64_t>, const int64_t*,
                                        std::span<const int64_t>, int64_t*, std::span<const int64_t>);

void relu_f32(const float* x, float* y, int64_t n) {
  // Written as a compare rather than std::max so that NaN propagates (numpy's maximum does).
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void clip_f32(const float* x, float* y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

void sigmoid_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v >= 0.0f) {
      y[i] = 1.0f / (1.0f + std::exp(-v));
    } else {
      // exp(v) underflows to 0 for very negative v instead of exp(-v) overflowing;
      // NaN also takes this branch and propagates.
      const float e = std::exp(v);
      y[i] = e / (1.0f + e);
    }
  }
}

}  // namespace quant::kernels
