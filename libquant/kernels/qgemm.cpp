// The inner loops are plain widening multiply-adds meant to be vectorised.
// GCC's -O2 cost model ("very cheap") refuses loops whose trip count is not
// known, so this file asks for the dynamic model (Clang vectorises at -O2).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include "libquant/kernels/qgemm.h"

#include <cassert>

namespace quant::kernels {
namespace {

template <class TA, class TB>
void check_args(const QGemmArgs<TA, TB>& p) {
  assert(p.m >= 0 && p.n >= 0 && p.k >= 0);
  assert(p.b_zero_point_count == 0 || p.b_zero_point_count == 1 || p.b_zero_point_count == p.n);
  assert(p.b_zero_point_count == 0 || p.b_zero_point != nullptr);
  assert(p.lda >= p.k && p.ldc >= p.n);
  assert(p.ldb >= (p.b_layout == BLayout::KxN ? p.n : p.k));
  (void)p;
}

template <class TA, class TB>
int32_t b_zero_point_at(const QGemmArgs<TA, TB>& p, int64_t n) {
  if (p.b_zero_point_count == 0) return 0;
  return static_cast<int32_t>(p.b_zero_point[p.b_zero_point_count == 1 ? 0 : n]);
}

template <class TB>
TB b_at(const TB* b, int64_t ldb, BLayout layout, int64_t k, int64_t n) {
  return layout == BLayout::KxN ? b[k * ldb + n] : b[n * ldb + k];
}

}  // namespace

template <class TA, class TB>
void qgemm(const QGemmArgs<TA, TB>& p) {
  check_args(p);
  const int32_t za = p.a_zero_point;
  for (int64_t m = 0; m < p.m; ++m) {
    const TA* a = p.a + m * p.lda;
    int32_t* c = p.c + m * p.ldc;
    // A's zero point is subtracted on the fly ((a - za) fits in 9 bits, so the
    // product with any b fits int32); B's zero point is applied afterwards:
    //   sum_k (a - za)(b - zb) = sum_k (a - za) b - zb * sum_k (a - za).
    // Sums run in uint32 so that wrapping is defined.
    uint32_t row_sum = 0;
    for (int64_t k = 0; k < p.k; ++k) row_sum += static_cast<uint32_t>(static_cast<int32_t>(a[k]) - za);
    if (p.b_layout == BLayout::KxN) {
      auto* cu = reinterpret_cast<uint32_t*>(c);
      for (int64_t n = 0; n < p.n; ++n) cu[n] = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const int32_t av = static_cast<int32_t>(a[k]) - za;
        const TB* b = p.b + k * p.ldb;
        for (int64_t n = 0; n < p.n; ++n) cu[n] += static_cast<uint32_t>(av * static_cast<int32_t>(b[n]));
      }
    } else {
      for (int64_t n = 0; n < p.n; ++n) {
        const TB* b = p.b + n * p.ldb;
        uint32_t s = 0;
        for (int64_t k = 0; k < p.k; ++k)
          s += static_cast<uint32_t>((static_cast<int32_t>(a[k]) - za) * static_cast<int32_t>(b[k]));
        c[n] = static_cast<int32_t>(s);
      }
    }
    if (p.b_zero_point_count == 0) continue;
    for (int64_t n = 0; n < p.n; ++n) {
      const uint32_t zb = static_cast<uint32_t>(b_zero_point_at(p, n));
      c[n] = static_cast<int32_t>(static_cast<uint32_t>(c[n]) - zb * row_sum);
    }
  }
}

template <class TA, class TB>
void qgemm_reference(const QGemmArgs<TA, TB>& p) {
  check_args(p);
  for (int64_t m = 0; m < p.m; ++m) {
    for (int64_t n = 0; n < p.n; ++n) {
      int64_t s = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t a = static_cast<int64_t>(p.a[m * p.lda + k]) - p.a_zero_point;
        const int64_t b = static_cast<int64_t>(b_at(p.b, p.ldb, p.b_layout, k, n)) - b_zero_point_at(p, n);
        s += a * b;
      }
      p.c[m * p.ldc + n] = static_cast<int32_t>(s);
    }
  }
}

template void qgemm<uint8_t, int8_t>(const QGemmArgs<uint8_t, int8_t>&);
template void qgemm<uint8_t, uint8_t>(const QGemmArgs<uint8_t, uint8_t>&);
template void qgemm<int8_t, int8_t>(const QGemmArgs<int8_t, int8_t>&);
template void qgemm<int8_t, uint8_t>(const QGemmArgs<int8_t, uint8_t>&);
template void qgemm_reference<uint8_t, int8_t>(const QGemmArgs<uint8_t, int8_t>&);
template void qgemm_reference<uint8_t, uint8_t>(const QGemmArgs<uint8_t, uint8_t>&);
template void qgemm_reference<int8_t, int8_t>(const QGemmArgs<int8_t, int8_t>&);
template void qgemm_reference<int8_t, uint8_t>(const QGemmArgs<int8_t, uint8_t>&);

}  // namespace quant::kernels
