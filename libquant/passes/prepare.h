// Graph preparation before quantization: the float graph is rewritten into an
// equivalent one whose weights are plain initializers feeding the ops that
// get quantized.
#pragma once

#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// Constant nodes holding a tensor `value` become initializers of the same name.
// Returns how many were converted.
int constants_to_initializers(ir::Graph& graph);

// Folds BatchNormalization (inference form) into a preceding Conv or Gemm whose
// weights are constants and whose output feeds only that BatchNormalization:
//   W'[m] = W[m] * s[m],  b'[m] = (b[m] - mean[m]) * s[m] + beta[m],
//   s[m] = gamma[m] / sqrt(var[m] + epsilon),
// computed in double and rounded once. `notes` gets one line per fold.
Status fold_batchnorm(ir::Graph& graph, std::vector<std::string>& notes);

}  // namespace quant::passes
