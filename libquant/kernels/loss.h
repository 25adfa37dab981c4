// ONNX NegativeLogLikelihoodLoss (opset 13) and the loss half of
// SoftmaxCrossEntropyLoss (opset 13), which is NLL over log_softmax(scores).
#pragma once

#include <cstdint>

namespace quant::kernels {

enum class LossReduction { None, Sum, Mean };

// input [N, C, D] (D = product of the dims after C, 1 for 2-D input) holds
// log-probabilities; target [N, D] class indices; weight (nullable) [C].
// Per element: loss[n,d] = -input[n, t, d] * w[t] with t = target[n,d],
// w = weight or 1, and 0 (weight 0) where t == ignore_index (when
// has_ignore_index). Reduction None writes loss [N, D]; Sum writes
// sum(loss); Mean writes sum(loss) / sum(w) over the elements that are not
// ignored (NaN when every element is ignored, as 0/0 in the ONNX reference).
// Sums run in double. Returns -1, or the flat position in target of the first
// class index outside [0, C) that is not ignore_index (then `loss` is not
// written). Allocates nothing.
template <class T>
int64_t nll_loss(const T* input, const int64_t* target, const T* weight, int64_t N, int64_t C, int64_t D,
                 bool has_ignore_index, int64_t ignore_index, LossReduction reduction, T* loss);

}  // namespace quant::kernels
