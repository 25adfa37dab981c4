// Cross-layer equalization (qconvert --equalize): Nagel, van Baalen, Blankevoort,
// Welling, "Data-Free Quantization Through Weight Equalization and Bias
// Correction", ICCV 2019, section 4.1; AIMET implements it as
// aimet_torch.cross_layer_equalization (CrossLayerScaling).
//
// Two weighted layers in a row, y = f(W2 g(W1 x + b1) + b2) with g positive
// homogeneous (g(x / s) = g(x) / s for s > 0: identity, Relu, LeakyRelu, Clip
// without an upper bound), compute the same function when output channel i of
// layer 1 is divided by s_i and input channel i of layer 2 multiplied by it:
//   W1[i] /= s_i,  b1[i] /= s_i,  W2[:, i] *= s_i.
// With r1_i, r2_i the channels' ranges (max |w|), s_i = sqrt(r1_i r2_i) / r2_i
// makes both ranges sqrt(r1_i r2_i): per-tensor weight quantization then wastes
// fewer levels on small channels. Chains (conv -> depthwise -> conv, the
// MobileNetV2 block) share the middle layer's weights between two pairs, so the
// pairs are equalized in turn until the scales stop changing.
//
// ReLU6 (Clip(0, 6)) does not commute with a per-channel scale: Clip(x, 0, 6) / s
// = Clip(x / s, 0, 6 / s), a bound per channel that ONNX Clip cannot hold. Such
// a pair is skipped (the report says so), unless `relu6_to_relu`, which replaces
// the Clip by a Relu first as the paper does for MobileNetV2 (its table 1): the
// float model then changes where activations exceed 6, and the caller says so.
//
// BatchNormalization is folded before (passes/prepare.h); one that could not
// fold sits between the layers and ends the pair. Weights and biases must be
// constants read by that node alone. The pass runs on the float graph; the
// activations between equalized layers change by 1/s_i per channel, so their
// per-tensor ranges must be measured again (EqualizeReport::changed_tensors).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

struct EqualizeOptions {
  int max_iterations = 200;
  // Converged when every scale of a sweep is within this of 1 (|log s| below it).
  double tolerance = 1e-6;
  bool relu6_to_relu = false;  // replace Clip(0, hi) between a pair by Relu (changes the float model)
};

struct EqualizeReport {
  struct Pair {
    std::string first, second;  // node names
    std::string between;        // "" (identity) or the activation's op type
  };
  std::vector<Pair> pairs;
  std::vector<std::string> notes;        // pairs skipped and why, Clips replaced
  std::set<std::string> changed_tensors;  // activations whose values were rescaled per channel
  // Clips replaced by Relu (relu6_to_relu): every activation after them may
  // change too, so none of the old profile's ranges downstream hold.
  std::vector<std::string> replaced_clips;
  int iterations = 0;
  bool converged = true;
};

// Equalizes every Conv/Gemm pair of `graph` in place (weights computed in
// double, rounded to float32 once).
Expected<EqualizeReport> equalize(ir::Graph& graph, const EqualizeOptions& options = {});

}  // namespace quant::passes
