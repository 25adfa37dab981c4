#include "libquant/kernels/loss.h"

namespace quant::kernels {

template <class T>
int64_t nll_loss(const T* input, const int64_t* target, const T* weight, int64_t N, int64_t C, int64_t D,
                 bool has_ignore_index, int64_t ignore_index, LossReduction reduction, T* loss) {
  // Validate every index first so that nothing reads outside input or weight.
  for (int64_t i = 0; i < N * D; ++i) {
    const int64_t t = target[i];
    if (has_ignore_index && t == ignore_index) continue;
    if (t < 0 || t >= C) return i;
  }
  double sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = target[n * D + d];
      double l = 0, w = 0;
      if (!(has_ignore_index && t == ignore_index)) {
        w = weight ? static_cast<double>(weight[t]) : 1.0;
        l = -static_cast<double>(input[(n * C + t) * D + d]) * w;
      }
      if (reduction == LossReduction::None) loss[n * D + d] = static_cast<T>(l);
      sum += l;
      weight_sum += w;
    }
  }
  if (reduction == LossReduction::Sum) loss[0] = static_cast<T>(sum);
  if (reduction == LossReduction::Mean) loss[0] = static_cast<T>(sum / weight_sum);
  return -1;
}

template int64_t nll_loss<float>(const float*, const int64_t*, const float*, int64_t, int64_t, int64_t, bool, int64_t,
                                 LossReduction, float*);
template int64_t nll_loss<double>(const double*, const int64_t*, const double*, int64_t, int64_t, int64_t, bool,
                                  int64_t, LossReduction, double*);

}  // namespace quant::kernels
