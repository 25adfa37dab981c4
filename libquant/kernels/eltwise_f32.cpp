#include "libquant/kernels/eltwise_f32.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/broadcast.h"
#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace quant::kernels {
namespace {

// The reference clamp order (see clip in unary.cpp). _mm_max_ps(lo, v) is
// lo > v ? lo : v and _mm_min_ps(hi, v) is hi < v ? hi : v: the same
// selections, and NaN v comes out as v in both.
inline float clamp_one(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

void clamp_range(const float* x, float* y, int64_t n, float lo, float hi) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  for (; i + 8 <= n; i += 8) {
    const __m128 a = _mm_min_ps(vhi, _mm_max_ps(vlo, _mm_loadu_ps(x + i)));
    const __m128 b = _mm_min_ps(vhi, _mm_max_ps(vlo, _mm_loadu_ps(x + i + 4)));
    _mm_storeu_ps(y + i, a);
    _mm_storeu_ps(y + i + 4, b);
  }
#endif
  for (; i < n; ++i) y[i] = clamp_one(x[i], lo, hi);
}

void add_range(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  for (; i + 4 <= n; i += 4) {
    __m128 s = _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    if (clamp) s = _mm_min_ps(vhi, _mm_max_ps(vlo, s));
    _mm_storeu_ps(y + i, s);
  }
#endif
  for (; i < n; ++i) y[i] = clamp ? clamp_one(a[i] + b[i], lo, hi) : a[i] + b[i];
}

// The four arithmetic ops, scalar and on four lanes, a as the first operand.
struct AddOp {
  static float one(float a, float b) { return a + b; }
#if defined(__SSE2__)
  static __m128 four(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
#endif
};
struct SubOp {
  static float one(float a, float b) { return a - b; }
#if defined(__SSE2__)
  static __m128 four(__m128 a, __m128 b) { return _mm_sub_ps(a, b); }
#endif
};
struct MulOp {
  static float one(float a, float b) { return a * b; }
#if defined(__SSE2__)
  static __m128 four(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
#endif
};
struct DivOp {
  static float one(float a, float b) { return a / b; }
#if defined(__SSE2__)
  static __m128 four(__m128 a, __m128 b) { return _mm_div_ps(a, b); }
#endif
};

// One run: y[i] = a[i * sa] OP b[i * sb] for i in [0, n), sa and sb 0 or 1
// (not both 0 unless n is 1: two inputs broadcast along a run would make
// its output dimension 1, which BroadcastRuns drops).
template <class Op>
void op_run(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (sa && sb) {
    for (; i + 8 <= n; i += 8) {
      const __m128 p = Op::four(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
      const __m128 q = Op::four(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
      _mm_storeu_ps(y + i, p);
      _mm_storeu_ps(y + i + 4, q);
    }
  } else if (sa) {
    const __m128 v = _mm_set1_ps(*b);
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, Op::four(_mm_loadu_ps(a + i), v));
  } else if (sb) {
    const __m128 v = _mm_set1_ps(*a);
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, Op::four(v, _mm_loadu_ps(b + i)));
  }
#endif
  for (; i < n; ++i) y[i] = Op::one(a[i * sa], b[i * sb]);
}

template <class Op>
void op_broadcast(const float* a, std::span<const int64_t> a_shape, const float* b, std::span<const int64_t> b_shape,
                  float* y, std::span<const int64_t> y_shape, int threads) {
  const BroadcastRuns<2> runs({a_shape, b_shape}, y_shape);
  in_pieces(runs.size(), threads, [&](int64_t first, int64_t count) {
    runs.visit(first, count, [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
      op_run<Op>(a + off[0], step[0], b + off[1], step[1], y + y_off, n);
    });
  });
}

}  // namespace

void clamp_f32(const float* x, float* y, int64_t n, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { clamp_range(x + i0, y + i0, len, lo, hi); });
}

void add_f32(const float* a, const float* b, float* y, int64_t n, bool clamp, float lo, float hi, int threads) {
  in_pieces(n, threads, [&](int64_t i0, int64_t len) { add_range(a + i0, b + i0, y + i0, len, clamp, lo, hi); });
}

void binary_f32(BinaryOp op, const float* a, std::span<const int64_t> a_shape, const float* b,
                std::span<const int64_t> b_shape, float* y, std::span<const int64_t> y_shape, int threads) {
  switch (op) {
    case BinaryOp::Add: return op_broadcast<AddOp>(a, a_shape, b, b_shape, y, y_shape, threads);
    case BinaryOp::Sub: return op_broadcast<SubOp>(a, a_shape, b, b_shape, y, y_shape, threads);
    case BinaryOp::Mul: return op_broadcast<MulOp>(a, a_shape, b, b_shape, y, y_shape, threads);
    case BinaryOp::Div: return op_broadcast<DivOp>(a, a_shape, b, b_shape, y, y_shape, threads);
    default: assert(false && "binary_f32: Add, Sub, Mul or Div only");
  }
}

}  // namespace quant::kernels
