#include "libquant/kernels/norm.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>


namespace quant::kernels {

template <class T>
void layer_norm(const T* x, int64_t outer, int64_t inner, const T* scale, const T* bias, double epsilon, T* y,
                float* mean_out, float* inv_std_out) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* xs = x + o * inner;
    T* ys = y + o * inner;
    double sum = 0;
    for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(xs[i]);
    const double mean = inner > 0 ? sum / static_cast<double>(inner) : 0.0;
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      const double d = static_cast<double>(xs[i]) - mean;
      sq += d * d;
    }
    const double var = inner > 0 ? sq / static_cast<double>(inner) : 0.0;
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < inner; ++i) {
      double v = (static_cast<double>(xs[i]) - mean) * inv_std * static_cast<double>(scale[i]);
      if (bias) v += static_cast<double>(bias[i]);
      ys[i] = static_cast<T>(v);
    }
    if (mean_out) mean_out[o] = static_cast<float>(mean);
    if (inv_std_out) inv_std_out[o] = static_cast<float>(inv_std);
  }
}

template <class T>
void instance_norm(const T* x, int64_t N, int64_t C, int64_t spatial, const T* scale, const T* bias, double epsilon,
                   T* y) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (n * C + c) * spatial;
      double sum = 0;
      for (int64_t i = 0; i < spatial; ++i) sum += static_cast<double>(x[base + i]);
      const double mean = spatial > 0 ? sum / static_cast<double>(spatial) : 0.0;
      double sq = 0;
      for (int64_t i = 0; i < spatial; ++i) {
        const double d = static_cast<double>(x[base + i]) - mean;
        sq += d * d;
      }
      const double var = spatial > 0 ? sq / static_cast<double>(spatial) : 0.0;
      const double a = static_cast<double>(scale[c]) / std::sqrt(var + epsilon);
      const double b = static_cast<double>(bias[c]) - mean * a;
      for (int64_t i = 0; i < spatial; ++i) y[base + i] = static_cast<T>(static_cast<double>(x[base + i]) * a + b);
    }
  }
}

template <class T>
void lrn(const T* x, int64_t N, int64_t C, int64_t spatial, int64_t size, double alpha, double beta, double bias,
         T* y) {
  assert(size >= 1);
  const int64_t before = (size - 1) / 2;   // floor((size-1)/2)
  const int64_t after = size / 2;          // ceil((size-1)/2)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min<int64_t>(C - 1, c + after);
      for (int64_t i = 0; i < spatial; ++i) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = static_cast<double>(x[(n * C + k) * spatial + i]);
          sq += v * v;
        }
        const int64_t at = (n * C + c) * spatial + i;
        y[at] = static_cast<T>(static_cast<double>(x[at]) / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
    }
  }
}

template <class T>
void mean_variance_norm(const T* x, std::span<const int64_t> shape, std::span<const bool> reduced, T* y,
                        double* scratch) {
  const size_t rank = shape.size();
  int64_t total = 1, kept_count = 1, red_count = 1;
  for (size_t i = 0; i < rank; ++i) {
    total *= shape[i];
    (reduced[i] ? red_count : kept_count) *= shape[i];
  }
  double* sum = scratch;
  double* sum_sq = scratch + kept_count;
  std::fill(sum, sum + 2 * kept_count, 0.0);
  // Row-major walk over x keeping the flat index of its kept coordinates.
  std::vector<int64_t> counter(rank, 0), kept_stride(rank, 0);
  int64_t s = 1;
  for (size_t i = rank; i-- > 0;) {
    if (!reduced[i]) {
      kept_stride[i] = s;
      s *= shape[i];
    }
  }
  auto walk = [&](auto&& f) {
    std::fill(counter.begin(), counter.end(), 0);
    int64_t k = 0;
    for (int64_t e = 0; e < total; ++e) {
      f(e, k);
      for (size_t i = rank; i-- > 0;) {
        k += kept_stride[i];
        if (++counter[i] < shape[i]) break;
        k -= kept_stride[i] * shape[i];
        counter[i] = 0;
      }
    }
  };
  walk([&](int64_t e, int64_t k) {
    const double v = static_cast<double>(x[e]);
    sum[k] += v;
    sum_sq[k] += v * v;
  });
  const double n = static_cast<double>(red_count);
  for (int64_t k = 0; k < kept_count; ++k) {
    const double mean = sum[k] / n;
    const double var = std::max(0.0, sum_sq[k] / n - mean * mean);
    sum[k] = mean;
    sum_sq[k] = std::sqrt(var) + 1e-9;
  }
  walk([&](int64_t e, int64_t k) { y[e] = static_cast<T>((static_cast<double>(x[e]) - sum[k]) / sum_sq[k]); });
}

template <class T>
void batchnorm(const T* x, int64_t N, int64_t C, int64_t spatial, bool per_element, const T* scale, const T* bias,
               const T* mean, const T* var, double epsilon, T* y) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (n * C + c) * spatial;
      for (int64_t i = 0; i < spatial; ++i) {
        const int64_t p = per_element ? c * spatial + i : c;
        const T a = static_cast<T>(scale[p] / std::sqrt(var[p] + static_cast<T>(epsilon)));
        const T b = bias[p] - mean[p] * a;
        y[base + i] = x[base + i] * a + b;
      }
    }
  }
}

template <class T>
void batch_stats(const T* x, int64_t N, int64_t C, int64_t spatial, bool per_element, T* mean, T* var) {
  const int64_t groups = per_element ? C * spatial : C;
  const int64_t per_group = per_element ? N : N * spatial;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t c = per_element ? g / spatial : g;
    const int64_t i0 = per_element ? g % spatial : 0, i1 = per_element ? i0 + 1 : spatial;
    double sum = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = i0; i < i1; ++i) sum += static_cast<double>(x[(n * C + c) * spatial + i]);
    const double m = per_group > 0 ? sum / static_cast<double>(per_group) : 0.0;
    double sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = i0; i < i1; ++i) {
        const double d = static_cast<double>(x[(n * C + c) * spatial + i]) - m;
        sq += d * d;
      }
    mean[g] = static_cast<T>(m);
    var[g] = static_cast<T>(per_group > 0 ? sq / static_cast<double>(per_group) : 0.0);
  }
}

#define QT_NORM_INSTANTIATE(T)                                                                                      \
  template void layer_norm<T>(const T*, int64_t, int64_t, const T*, const T*, double, T*, float*, float*);          \
  template void instance_norm<T>(const T*, int64_t, int64_t, int64_t, const T*, const T*, double, T*);              \
  template void lrn<T>(const T*, int64_t, int64_t, int64_t, int64_t, double, double, double, T*);                   \
  template void mean_variance_norm<T>(const T*, std::span<const int64_t>, std::span<const bool>, T*, double*);      \
  template void batchnorm<T>(const T*, int64_t, int64_t, int64_t, bool, const T*, const T*, const T*, const T*,     \
                             double, T*);                                                                           \
  template void batch_stats<T>(const T*, int64_t, int64_t, int64_t, bool, T*, T*);
QT_NORM_INSTANTIATE(float)
QT_NORM_INSTANTIATE(double)
#undef QT_NORM_INSTANTIATE

}  // namespace quant::kernels
