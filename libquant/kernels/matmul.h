// Numpy-style batched matrix multiply, ONNX MatMul (opset 13).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// Output shape of MatMul(a, b) (numpy.matmul rules, ONNX MatMul opset 13):
// a 1-D A is promoted to [1,K] and a 1-D B to [K,1], the promoted dimension
// being removed from the result; batch dimensions (all but the last two)
// broadcast. nullopt for a rank-0 operand, mismatched K, or unbroadcastable
// batch dimensions.
std::optional<Dims> matmul_output_shape(std::span<const int64_t> a, std::span<const int64_t> b);

// Y = A x B for shapes accepted by matmul_output_shape; Y has that shape and
// must not alias A or B. One packed GEMM (gemm_packed.h) for all batches
// where B has no batches of its own, else one per batch, the batches split
// over up to `threads` threads (threads_for_product: small products run on
// one).
void matmul_f32(const float* A, std::span<const int64_t> a_shape, const float* B, std::span<const int64_t> b_shape,
                float* Y, int threads = 1);

}  // namespace quant::kernels
