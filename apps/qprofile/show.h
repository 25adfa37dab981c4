// `qprofile show`: what each calibration method would do with each tensor.
#pragma once

#include <string>
#include <vector>

#include "libquant/calib/assess.h"
#include "libquant/core/status.h"
#include "libquant/profile/profile.h"

namespace qtool {

struct ShowOptions {
  std::string profile;
  std::string tensor;                  // --tensor: one tensor with an ASCII histogram
  std::string calibration = "minmax";  // the method whose range is "chosen" (qconvert's default)
  std::string plot_dir;                // --plot
  std::string html;                    // --html: the analysis as one page
  bool json = false;
};

// One tensor's analysis: the four methods of DESIGN plus the chosen one.
struct TensorAnalysis {
  std::string name;
  const quant::profile::TensorProfile* tensor = nullptr;
  std::vector<quant::calib::MethodCost> methods;  // minmax, percentile, kl, mse
  quant::calib::MethodCost chosen;
};

// Every tensor of `profile`, hardest first: lowest estimated SQNR of the chosen
// method, then the larger clipped share, then by name. bad_input for an unknown method.
quant::Expected<std::vector<TensorAnalysis>> analyse_profile(const quant::profile::Profile& profile,
                                                            const std::string& calibration);

quant::Status show_profile(const ShowOptions& options);

}  // namespace qtool
