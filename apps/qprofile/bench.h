// qprofile --bench N: what profiling costs per sample, measured in one process
// (issue #22's budget: qprofile at most qrun's unfused float run plus 0.5 ns
// per profiled value).
#pragma once

#include <string>

#include "apps/common/data.h"
#include "libquant/core/status.h"
#include "libquant/interp/session.h"

namespace qtool {

// Runs every sample of `data` through `session` (the plan qprofile profiles:
// unfused, every value computed) without an observer and with every value
// added to histograms of `bins` bins, one warm-up run of each, then `runs`
// times each, alternating, so that a slow spell of a shared host hits both
// alike. Prints one line: the median CPU ms per sample of both, the median
// over neighbouring pairs of runs of their difference (in ms per sample and
// per profiled value), and the observer's own time. Writes no profile.
quant::Status bench_profile(const quant::interp::Session& session, const DataReader& data, int bins, int runs,
                            const std::string& model_path);

}  // namespace qtool
