// Normalization kernels: LayerNormalization (opset 17), InstanceNormalization
// (opset 6), LRN (opset 13), MeanVarianceNormalization (opset 13) and
// BatchNormalization for any float type, with the batch statistics of its
// training mode. Statistics accumulate in double. Standard library only.
#pragma once

#include <cstdint>
#include <span>

namespace quant::kernels {

// LayerNormalization-17 over x viewed as [outer, inner] (inner = product of
// the dims from `axis` on): per row, mean and population variance, then
// y = (x - mean) * inv_std * scale + bias with inv_std = 1 / sqrt(var + epsilon).
// scale and bias (nullable) hold `inner` values (the caller expands a
// broadcast one). mean_out / inv_std_out (nullable) receive `outer` values.
// y must not alias x. Allocates nothing.
template <class T>
void layer_norm(const T* x, int64_t outer, int64_t inner, const T* scale, const T* bias, double epsilon, T* y,
                float* mean_out, float* inv_std_out);

// InstanceNormalization-6 on x [N, C, spatial]: per (n, c) mean and
// population variance over the spatial elements, then
// y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c].
template <class T>
void instance_norm(const T* x, int64_t N, int64_t C, int64_t spatial, const T* scale, const T* bias, double epsilon,
                   T* y);

// LRN-13 on x [N, C, spatial]: y = x / (bias + alpha / size * square_sum)^beta,
// square_sum over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]
// clipped to [0, C). size >= 1.
template <class T>
void lrn(const T* x, int64_t N, int64_t C, int64_t spatial, int64_t size, double alpha, double beta, double bias,
         T* y);

// MeanVarianceNormalization-13 (its function body): over the axes flagged in
// `reduced`, y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9). The variance is
// clamped at 0 so that rounding cannot make sqrt return NaN. `scratch` holds
// 2 * (number of kept elements) doubles. y must not alias x.
template <class T>
void mean_variance_norm(const T* x, std::span<const int64_t> shape, std::span<const bool> reduced, T* y,
                        double* scratch);

// BatchNormalization with given statistics on x [N, C, spatial]. With
// per_element (BatchNormalization-6/7 spatial=0) the parameters hold
// C * spatial values, one per (c, i); otherwise C values. Evaluated folded, as
// ONNX Runtime does: a = scale / sqrt(var + epsilon), y = x * a + (bias - mean * a).
template <class T>
void batchnorm(const T* x, int64_t N, int64_t C, int64_t spatial, bool per_element, const T* scale, const T* bias,
               const T* mean, const T* var, double epsilon, T* y);

// Batch statistics of BatchNormalization's training mode: mean and
// population variance (numpy's x.var(), as the ONNX reference uses) over N
// and the spatial elements, per channel (per (c, i) with per_element).
template <class T>
void batch_stats(const T* x, int64_t N, int64_t C, int64_t spatial, bool per_element, T* mean, T* var);

}  // namespace quant::kernels
