#include "libquant/kernels/batchnorm.h"

#include <cmath>

namespace quant::kernels {

void batchnorm_f32(const float* x, int64_t N, int64_t C, int64_t spatial, const float* scale, const float* bias,
                   const float* mean, const float* var, float epsilon, float* y) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const float a = scale[c] / std::sqrt(var[c] + epsilon);
      const float b = bias[c] - mean[c] * a;
      const int64_t base = (n * C + c) * spatial;
      for (int64_t i = 0; i < spatial; ++i) y[base + i] = x[base + i] * a + b;
    }
  }
}

}  // namespace quant::kernels
