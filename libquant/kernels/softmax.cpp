#include "libquant/kernels/softmax.h"

#include <cassert>
#include <cmath>

namespace quant::kernels {

template <>
void softmax<float>(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y) {
  softmax_f32(x, outer, axis_len, inner, y);
}
template <>
void log_softmax<float>(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y) {
  log_softmax_f32(x, outer, axis_len, inner, y);
}

template <class T>
void softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y) {
  assert(axis_len >= 1 && inner >= 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      // One slice: axis_len elements spaced `inner` apart.
      const T* xs = x + o * axis_len * inner + j;
      T* ys = y + o * axis_len * inner + j;
      T max = xs[0];
      for (int64_t a = 1; a < axis_len; ++a) max = std::fmax(max, xs[a * inner]);
      T sum = 0;
      for (int64_t a = 0; a < axis_len; ++a) {
        const T e = std::exp(xs[a * inner] - max);
        ys[a * inner] = e;
        sum += e;
      }
      for (int64_t a = 0; a < axis_len; ++a) ys[a * inner] /= sum;
    }
  }
}

template <class T>
void log_softmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y) {
  assert(axis_len >= 1 && inner >= 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xs = x + o * axis_len * inner + j;
      T* ys = y + o * axis_len * inner + j;
      T max = xs[0];
      for (int64_t a = 1; a < axis_len; ++a) max = std::fmax(max, xs[a * inner]);
      T sum = 0;
      for (int64_t a = 0; a < axis_len; ++a) sum += std::exp(xs[a * inner] - max);
      const T shift = max + std::log(sum);
      for (int64_t a = 0; a < axis_len; ++a) ys[a * inner] = xs[a * inner] - shift;
    }
  }
}

template <class T>
void hardmax(const T* x, int64_t outer, int64_t axis_len, int64_t inner, T* y) {
  assert(axis_len >= 1 && inner >= 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xs = x + o * axis_len * inner + j;
      T* ys = y + o * axis_len * inner + j;
      int64_t best = 0;
      for (int64_t a = 1; a < axis_len; ++a)
        if (xs[a * inner] > xs[best * inner]) best = a;
      // Written after the scan so that y may alias x.
      for (int64_t a = 0; a < axis_len; ++a) ys[a * inner] = a == best ? T(1) : T(0);
    }
  }
}

template void softmax<double>(const double*, int64_t, int64_t, int64_t, double*);
template void log_softmax<double>(const double*, int64_t, int64_t, int64_t, double*);
template void hardmax<float>(const float*, int64_t, int64_t, int64_t, float*);
template void hardmax<double>(const double*, int64_t, int64_t, int64_t, double*);

}  // namespace quant::kernels
