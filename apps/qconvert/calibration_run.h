// qconvert --equalize / --bias-correction: one run of the float graph, as
// insert_qdq will quantize it (prepared, equalized), over the calibration data
// (--data), collecting what those passes need: the histograms of the
// activations equalization rescaled per channel (a per-tensor profile cannot be
// rescaled by a per-channel factor: the new range is max_i(range_i / s_i), and
// the profile does not keep ranges per channel), and the layers' mean inputs
// for bias correction (passes/bias_correction.h); and for --weight-rounding
// gptq the sums x x^T of every MatMul/Gemm's input rows (passes/hessian_collector.h).
#pragma once

#include <map>
#include <set>
#include <string>

#include "apps/common/data.h"
#include "libquant/calib/bias_correction.h"
#include "libquant/calib/gptq.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/profile.h"

namespace qtool {

struct Calibration {
  std::map<std::string, quant::profile::TensorProfile> tensors;  // the `profiled` activations
  std::map<std::string, quant::calib::InputMeans> means;         // node -> input sums (with `means`)
  std::map<std::string, quant::calib::Hessian> hessians;         // node -> input x x^T sums (with `hessians`)
  std::map<std::string, double> smooth_alpha;                    // --smooth-quant=auto: group input -> alpha
  std::vector<std::string> notes;
};

quant::Expected<Calibration> run_calibration(const quant::ir::Graph& graph, const DataFlags& data,
                                             const std::string& model_path, int bins,
                                             const std::set<std::string>& profiled, bool means, bool hessians = false);

// --smooth-quant=auto: a float run of `graph` (prepared, not yet smoothed)
// keeping the first kSmoothRows rows of every smoothing group's input, then
// calib::search_alpha per group (factors from `profile`'s channel absmax).
// Returns input name -> alpha; one note per group.
constexpr int64_t kSmoothRows = 512;
quant::Expected<std::map<std::string, double>> search_smooth_alphas(const quant::ir::Graph& graph, const DataFlags& data,
                                                                    const std::string& model_path,
                                                                    const quant::profile::Profile& profile,
                                                                    std::vector<std::string>& notes);

}  // namespace qtool
