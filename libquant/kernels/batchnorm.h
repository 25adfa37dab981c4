// Inference BatchNormalization, ONNX BatchNormalization (opset 15,
// training_mode = 0).
#pragma once

#include <cstdint>

namespace quant::kernels {

// y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel, for
// x[N, C, spatial] (spatial = product of the dims after C; 1 for 2-D input).
// scale, bias, mean, var have C elements. Evaluated as ONNX Runtime does,
// folded per channel: a = scale / sqrt(var + epsilon), b = bias - mean * a,
// y = x * a + b (the form the BatchNorm-folding pass produces too).
// y may alias x. Allocates nothing.
void batchnorm_f32(const float* x, int64_t N, int64_t C, int64_t spatial, const float* scale, const float* bias,
                   const float* mean, const float* var, float epsilon, float* y);

}  // namespace quant::kernels
