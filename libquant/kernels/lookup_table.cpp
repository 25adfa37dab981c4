#include "libquant/kernels/lookup_table.h"

#include <algorithm>
#include <cmath>

#include "libquant/kernels/quantize.h"
#include "libquant/kernels/sigmoid_f32.h"

namespace quant::kernels {

template <class T>
void lookup_table_inputs(float x_scale, T x_zero_point, float* in) {
  for (int i = 0; i < 256; ++i) {
    const T x = static_cast<T>(static_cast<uint8_t>(i));
    in[i] = x_scale * static_cast<float>(static_cast<int>(x) - static_cast<int>(x_zero_point));
  }
}

template <class T>
void lookup_table_from_outputs(const float* out, float y_scale, T y_zero_point, T* table) {
  quantize_linear<T>(out, table, 1, 256, 1, &y_scale, &y_zero_point, 0, 1);
}

void logistic_mlas(const float* x, float* y, int64_t n) { sigmoid_f32(x, y, n, 1); }

void leaky_relu_values(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

template void lookup_table_inputs<uint8_t>(float, uint8_t, float*);
template void lookup_table_inputs<int8_t>(float, int8_t, float*);
template void lookup_table_from_outputs<uint8_t>(const float*, float, uint8_t, uint8_t*);
template void lookup_table_from_outputs<int8_t>(const float*, float, int8_t, int8_t*);

}  // namespace quant::kernels
