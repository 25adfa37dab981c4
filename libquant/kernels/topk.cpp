#include "libquant/kernels/topk.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <type_traits>

namespace quant::kernels {
namespace {

// a < b with NaN above every number (NaN == NaN).
template <class T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

}  // namespace

template <class T>
void topk(const T* x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool largest, T* values, int64_t* indices,
          int64_t* scratch) {
  assert(k >= 0 && k <= len);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xs = x + o * len * inner + j;
      for (int64_t a = 0; a < len; ++a) scratch[a] = a;
      // Ties broken by index makes the order total, so partial_sort is deterministic.
      auto before = [&](int64_t a, int64_t b) {
        const T va = xs[a * inner], vb = xs[b * inner];
        if (largest ? less_nan_last(vb, va) : less_nan_last(va, vb)) return true;
        if (largest ? less_nan_last(va, vb) : less_nan_last(vb, va)) return false;
        return a < b;
      };
      std::partial_sort(scratch, scratch + k, scratch + len, before);
      for (int64_t r = 0; r < k; ++r) {
        values[(o * k + r) * inner + j] = xs[scratch[r] * inner];
        indices[(o * k + r) * inner + j] = scratch[r];
      }
    }
  }
}

#define QT_TOPK_INSTANTIATE(T) \
  template void topk<T>(const T*, int64_t, int64_t, int64_t, int64_t, bool, T*, int64_t*, int64_t*);
QT_TOPK_INSTANTIATE(float)
QT_TOPK_INSTANTIATE(double)
QT_TOPK_INSTANTIATE(int8_t)
QT_TOPK_INSTANTIATE(uint8_t)
QT_TOPK_INSTANTIATE(int16_t)
QT_TOPK_INSTANTIATE(uint16_t)
QT_TOPK_INSTANTIATE(int32_t)
QT_TOPK_INSTANTIATE(uint32_t)
QT_TOPK_INSTANTIATE(int64_t)
QT_TOPK_INSTANTIATE(uint64_t)
#undef QT_TOPK_INSTANTIATE

}  // namespace quant::kernels
