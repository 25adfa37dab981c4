#pragma once

#include <string>
#include <vector>

#include "libquant/core/status.h"

namespace qtool {

// `qprofile merge`: combines profiles of the same model (equal model digest and
// graph signature; otherwise bad_input naming both files) into `output`.
// Histograms combine exactly (Histogram::merge), so the result does not depend
// on how the profiles are grouped or ordered, except for the double sums' last bits.
quant::Status merge_profiles(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace qtool
