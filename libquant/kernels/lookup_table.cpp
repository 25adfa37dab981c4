#include "libquant/kernels/lookup_table.h"

#include <algorithm>
#include <cmath>

#include "libquant/kernels/quantize.h"

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

template <class T>
void apply_lookup_table(const T* x, const T* table, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[static_cast<uint8_t>(x[i])];
}

void logistic_mlas(const float* x, float* y, int64_t n) {
  // Eigen's / MLAS's rational approximation (MlasLogisticConstants).
  constexpr float alpha_9 = 4.37031012579801e-11f, alpha_7 = 1.15627324459942e-07f, alpha_5 = 6.08574864600143e-05f,
                  alpha_3 = 8.51377133304701e-03f, alpha_1 = 2.48287947061529e-01f;
  constexpr float beta_10 = 6.10247389755681e-13f, beta_8 = 5.76102136993427e-09f, beta_6 = 6.29106785017040e-06f,
                  beta_4 = 1.70198817374094e-03f, beta_2 = 1.16817656904453e-01f, beta_0 = 9.93151921023180e-01f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::min(std::max(x[i], -18.0f), 18.0f);
    const float v2 = v * v;
    float p = std::fma(v2, alpha_9, alpha_7);
    p = std::fma(p, v2, alpha_5);
    p = std::fma(p, v2, alpha_3);
    p = std::fma(p, v2, alpha_1);
    p = p * v;
    float q = std::fma(v2, beta_10, beta_8);
    q = std::fma(q, v2, beta_6);
    q = std::fma(q, v2, beta_4);
    q = std::fma(q, v2, beta_2);
    q = std::fma(q, v2, beta_0);
    y[i] = std::min(std::max(p / q + 0.5f, 0.0f), 1.0f);
  }
}

void leaky_relu_values(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

template void lookup_table_inputs<uint8_t>(float, uint8_t, float*);
template void lookup_table_inputs<int8_t>(float, int8_t, float*);
template void lookup_table_from_outputs<uint8_t>(const float*, float, uint8_t, uint8_t*);
template void lookup_table_from_outputs<int8_t>(const float*, float, int8_t, int8_t*);
template void apply_lookup_table<uint8_t>(const uint8_t*, const uint8_t*, uint8_t*, int64_t);
template void apply_lookup_table<int8_t>(const int8_t*, const int8_t*, int8_t*, int64_t);

}  // namespace quant::kernels
