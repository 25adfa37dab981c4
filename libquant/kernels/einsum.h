// ONNX Einsum (opset 12): a general sum of products over labelled axes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace quant::kernels {

// How to evaluate one equation for given operand shapes. Every distinct label
// (letters, and one label per broadcast dimension of "...") is one loop; the
// output labels come first, in output order, then the summed ones.
struct EinsumPlan {
  std::vector<int64_t> sizes;                 // per loop label
  std::vector<std::vector<int64_t>> strides;  // [operand][label]: element stride, 0 if absent or broadcast
  size_t output_labels = 0;                   // the first output_labels loops index the output
  std::vector<int64_t> output_shape;
};

// Parses `equation` (spaces ignored) for operands of these shapes, following
// numpy.einsum: a label repeated within a term takes the diagonal; "..."
// stands for the same broadcast dimensions in every term; without "->" the
// output is the "..." dimensions followed by the labels that occur exactly
// once, in ASCII order. nullopt with `error` set when the equation is
// malformed or does not fit the shapes.
std::optional<EinsumPlan> plan_einsum(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes,
                                      std::string* error);

// y[out labels] = sum over the summed labels of the product of the operands.
// Floating types accumulate in double, integers in 64 bits. y must not alias
// an operand. Allocates only the per-call loop counter.
template <class T>
void einsum(const EinsumPlan& plan, std::span<const T* const> operands, T* y);

}  // namespace quant::kernels
