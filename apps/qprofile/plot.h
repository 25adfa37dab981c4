// `qprofile show --plot DIR`: one PNG per tensor (its histogram on a log scale
// with the ranges of minmax, percentile, KL and MSE marked) and an index.html
// showing them all, hardest tensors first.
#pragma once

#include <string>
#include <vector>

#include "apps/qprofile/canvas.h"
#include "apps/qprofile/show.h"

namespace qtool {

// Draws one tensor's plot.
Canvas plot_tensor(const TensorAnalysis& analysis);

// "007_conv1_out.png": rank, then the name with anything but [A-Za-z0-9_.-] as '_'.
std::string plot_file_name(size_t rank, const std::string& tensor);

// Creates `dir` if needed and writes every plot plus index.html (each file atomically).
quant::Status write_plots(const quant::profile::Profile& profile, const std::vector<TensorAnalysis>& tensors,
                          const std::string& dir);

}  // namespace qtool
