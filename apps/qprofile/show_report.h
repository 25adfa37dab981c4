// `qprofile show --html REPORT.html`: the analysis of `qprofile show` as one
// self-contained page (apps/common/html_report.h): the per-tensor ranges
// table, hardest first, and each tensor's histogram with the range each
// calibration method chooses.
#pragma once

#include "apps/common/html_report.h"
#include "apps/qprofile/show.h"

namespace qtool {

html::Page profile_page(const quant::profile::Profile& profile, const std::vector<TensorAnalysis>& tensors,
                        const ShowOptions& options);

}  // namespace qtool
