#include "libquant/kernels/softmax.h"

#include <cassert>
#include <cmath>

namespace quant::kernels {

void softmax_f32(const float* x, int64_t outer, int64_t axis_len, int64_t inner, float* y) {
  assert(axis_len >= 1 && inner >= 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      // One slice: axis_len elements spaced `inner` apart.
      const float* xs = x + o * axis_len * inner + j;
      float* ys = y + o * axis_len * inner + j;
      float max = xs[0];
      for (int64_t a = 1; a < axis_len; ++a) max = std::fmax(max, xs[a * inner]);
      float sum = 0.0f;
      for (int64_t a = 0; a < axis_len; ++a) {
        const float e = std::exp(xs[a * inner] - max);
        ys[a * inner] = e;
        sum += e;
      }
      for (int64_t a = 0; a < axis_len; ++a) ys[a * inner] /= sum;
    }
  }
}

}  // namespace quant::kernels
