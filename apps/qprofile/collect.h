// Runs the model over the data and fills one histogram per float activation.
#pragma once

#include "apps/common/data.h"
#include "libquant/interp/session.h"
#include "libquant/profile/profile.h"

namespace qtool {

struct CollectOptions {
  int bins = 2048;
  int threads = 1;
  bool quiet = false;
  // A run whose inputs hold NaN or Inf is left out with a warning naming the
  // sample and the input (one corrupt sample would otherwise set every range
  // downstream of it); with `strict` it is an error (exit 2).
  bool strict = false;
};

// Fills `profile.tensors` and `profile.samples`.
//
// Determinism (profiles/README.md, "Threads"): the runs are cut into chunks of
// kRunsPerChunk consecutive runs, a partition that does not depend on the thread
// count. Each chunk is profiled by one thread into its own histograms, and chunks are
// folded into the result strictly in chunk order. Histograms would combine to the same
// bits in any order (power-of-two lattice); the fixed order also makes the double
// sums, the recorded first shape and the reported error (the first failing run)
// identical for every --threads value.
quant::Status collect_profile(const quant::interp::Session& session, const DataReader& data, const CollectOptions& options,
                              const std::string& model_path, quant::profile::Profile& profile);

constexpr size_t kRunsPerChunk = 8;

// How --threads is spent: one thread per chunk in flight, at most as many as
// there are chunks; the threads left over go to the kernels of each run (whose
// results are the same bits for any thread count), so that a few samples, one
// chunk, still use every thread.
struct ThreadSplit {
  size_t sample_threads = 1;
  int kernel_threads = 1;
};
ThreadSplit split_threads(size_t runs, int threads);

}  // namespace qtool
