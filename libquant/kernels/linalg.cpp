#include "libquant/kernels/linalg.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "libquant/kernels/matmul.h"
#include "libquant/kernels/shape_util.h"

namespace quant::kernels {
namespace {

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const T* A, const T* B, double beta,
          const T* C, int64_t c_rows, int64_t c_cols, T* Y) {
  const bool use_c = C != nullptr && beta != 0.0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      Acc<T> acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T a = trans_a ? A[k * M + m] : A[m * K + k];
        const T b = trans_b ? B[n * K + k] : B[k * N + n];
        acc += static_cast<Acc<T>>(a) * static_cast<Acc<T>>(b);
      }
      double v = alpha * static_cast<double>(acc);
      if (use_c) v += beta * static_cast<double>(C[(c_rows == 1 ? 0 : m) * c_cols + (c_cols == 1 ? 0 : n)]);
      // Integer Gemm with alpha = beta = 1 (the only form integer models use)
      // stays exact: skip the double round trip.
      if constexpr (!std::is_floating_point_v<T>) {
        if (alpha == 1.0 && (!use_c || beta == 1.0)) {
          Acc<T> exact = acc;
          if (use_c) exact += static_cast<Acc<T>>(C[(c_rows == 1 ? 0 : m) * c_cols + (c_cols == 1 ? 0 : n)]);
          Y[m * N + n] = static_cast<T>(exact);
          continue;
        }
      }
      Y[m * N + n] = static_cast<T>(v);
    }
  }
}

template <class T>
void matmul(const T* A, std::span<const int64_t> a_shape, const T* B, std::span<const int64_t> b_shape, T* Y) {
  // Promote 1-D operands to matrices, as numpy.matmul does.
  const Dims a = a_shape.size() == 1 ? Dims{1, a_shape[0]} : Dims(a_shape.begin(), a_shape.end());
  const Dims b = b_shape.size() == 1 ? Dims{b_shape[0], 1} : Dims(b_shape.begin(), b_shape.end());
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  const Dims a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const auto batch = broadcast_shapes(a_batch, b_batch);
  assert(batch && b[b.size() - 2] == K);
  const Dims a_strides = broadcast_strides(a_batch, *batch), b_strides = broadcast_strides(b_batch, *batch);
  const int64_t batches = element_count(*batch);
  Dims counter(batch->size(), 0);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t ai = 0, bi = 0;
    for (size_t d = 0; d < counter.size(); ++d) {
      ai += counter[d] * a_strides[d];
      bi += counter[d] * b_strides[d];
    }
    gemm<T>(false, false, M, N, K, 1.0, A + ai * M * K, B + bi * K * N, 0.0, nullptr, 1, 1, Y + i * M * N);
    for (size_t d = counter.size(); d-- > 0;) {
      if (++counter[d] < (*batch)[d]) break;
      counter[d] = 0;
    }
  }
}

template <class T>
void det(const T* x, int64_t batch, int64_t M, T* y, double* lu) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < M * M; ++i) lu[i] = static_cast<double>(x[b * M * M + i]);
    double d = 1.0;
    for (int64_t c = 0; c < M; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < M; ++r)
        if (std::abs(lu[r * M + c]) > std::abs(lu[pivot * M + c])) pivot = r;
      if (lu[pivot * M + c] == 0.0) {
        d = 0.0;
        break;
      }
      if (pivot != c) {
        for (int64_t j = 0; j < M; ++j) std::swap(lu[c * M + j], lu[pivot * M + j]);
        d = -d;
      }
      d *= lu[c * M + c];
      for (int64_t r = c + 1; r < M; ++r) {
        const double f = lu[r * M + c] / lu[c * M + c];
        for (int64_t j = c; j < M; ++j) lu[r * M + j] -= f * lu[c * M + j];
      }
    }
    y[b] = static_cast<T>(d);
  }
}

void trilu(const void* x, int64_t batch, int64_t rows, int64_t cols, int64_t k, bool upper, size_t elem_size, void* y) {
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  const size_t row_bytes = static_cast<size_t>(cols) * elem_size;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      const size_t at = static_cast<size_t>(b * rows + i) * row_bytes;
      // Kept columns form one range: [i + k, cols) for upper, [0, i + k] for lower.
      const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      std::memset(dst + at, 0, row_bytes);
      if (hi > lo)
        std::memcpy(dst + at + static_cast<size_t>(lo) * elem_size, src + at + static_cast<size_t>(lo) * elem_size,
                    static_cast<size_t>(hi - lo) * elem_size);
    }
  }
}

#define QT_LINALG_INSTANTIATE(T)                                                                                    \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, double, const T*, const T*, double, const T*,        \
                        int64_t, int64_t, T*);                                                                      \
  template void matmul<T>(const T*, std::span<const int64_t>, const T*, std::span<const int64_t>, T*);
QT_LINALG_INSTANTIATE(float)
QT_LINALG_INSTANTIATE(double)
QT_LINALG_INSTANTIATE(int32_t)
QT_LINALG_INSTANTIATE(uint32_t)
QT_LINALG_INSTANTIATE(int64_t)
QT_LINALG_INSTANTIATE(uint64_t)
#undef QT_LINALG_INSTANTIATE
template void det<float>(const float*, int64_t, int64_t, float*, double*);
template void det<double>(const double*, int64_t, int64_t, double*, double*);

}  // namespace quant::kernels
