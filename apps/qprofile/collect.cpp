#include "apps/qprofile/collect.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "apps/common/progress.h"
#include "libquant/interp/body_observer.h"
#include "libquant/profile/collector.h"

namespace qtool {
namespace {

using Tensors = std::map<std::string, quant::profile::TensorProfile>;

constexpr size_t kNamedBadSamples = 5;  // samples with NaN/Inf inputs warned about by name

struct NonFinite {
  size_t input = 0;   // index in graph.inputs
  size_t sample = 0;  // index in the run's batch of the first one
  int64_t count = 0;  // NaN/Inf values in that input, over the batch
};

// The first float input of a run of `samples` holding NaN or Inf; nullopt
// when every float input is finite.
std::optional<NonFinite> non_finite_input(const std::vector<quant::Tensor>& inputs, size_t samples) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != quant::DType::Float32 || inputs[i].size() == 0) continue;
    const float* x = inputs[i].data<float>();
    NonFinite bad{i, 0, 0};
    int64_t first = -1;
    for (int64_t k = 0; k < inputs[i].size(); ++k)
      if (!std::isfinite(x[k])) bad.count++, first = first < 0 ? k : first;
    if (bad.count == 0) continue;
    bad.sample = static_cast<size_t>(first / (inputs[i].size() / static_cast<int64_t>(std::max<size_t>(samples, 1))));
    return bad;
  }
  return std::nullopt;
}

}  // namespace

ThreadSplit split_threads(size_t runs, int threads) {
  const size_t chunks = (runs + kRunsPerChunk - 1) / kRunsPerChunk;
  ThreadSplit split;
  split.sample_threads = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, std::max<size_t>(chunks, 1));
  split.kernel_threads = std::max(1, threads / static_cast<int>(split.sample_threads));
  return split;
}

quant::Status collect_profile(const quant::interp::Session& session, const DataReader& data, const CollectOptions& options,
                              const std::string& model_path, quant::profile::Profile& profile) {
  const size_t runs = data.runs();
  const size_t chunks = (runs + kRunsPerChunk - 1) / kRunsPerChunk;
  const size_t threads = split_threads(runs, options.threads).sample_threads;
  // At most this many chunks are in flight or waiting to be folded: memory stays
  // bounded by the thread count, not by the data size.
  const size_t window = 2 * threads;

  Progress progress("qprofile", data.samples(), options.quiet);
  std::mutex mu;
  std::condition_variable cv;
  size_t next_chunk = 0, next_fold = 0;
  std::map<size_t, quant::Expected<Tensors>> done;  // finished, not yet folded
  std::optional<quant::Status> failure;
  size_t skipped = 0;  // samples left out for non-finite inputs

  auto profile_chunk = [&](size_t chunk) -> quant::Expected<Tensors> {
    // Histograms are updated per run and activations dropped right after:
    // memory stays flat in the number of samples.
    quant::profile::Collector collector(session.graph(), options.bins);
    // Values inside If/Loop/Scan bodies too, named "<scope>/<value>" (profiles/README.md).
    const quant::interp::ObserveBodies bodies;
    auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
      collector.observe(v, t, quant::interp::body_scope());
    };
    for (size_t run = chunk * kRunsPerChunk; run < std::min(runs, (chunk + 1) * kRunsPerChunk); ++run) {
      auto inputs = data.load(run);
      if (!inputs) return inputs.status();
      if (auto bad = non_finite_input(*inputs, data.samples_in_run(run))) {
        const std::string what = data.file_of(run, bad->sample, bad->input) + ": input '" +
                                 session.graph().inputs[bad->input]->name() + "' has " + std::to_string(bad->count) +
                                 " NaN/Inf value" + (bad->count > 1 ? "s" : "") +
                                 (data.samples_in_run(run) > 1 ? " (in " + data.describe(run) + ")" : "");
        if (options.strict) return quant::Status::bad_input(what + " (--strict)");
        std::lock_guard lock(mu);
        // The first few by name; the rest in the count at the end.
        if (skipped < kNamedBadSamples) spdlog::warn("{}: left out of the profile (--strict makes this an error)", what);
        skipped += data.samples_in_run(run);
        for (size_t s = 0; s < data.samples_in_run(run); ++s) progress.tick();
        continue;
      }
      auto outs = session.run(*inputs, observe);
      if (!outs) return outs.status().with_context(model_path + ", " + data.describe(run));
      std::lock_guard lock(mu);
      for (size_t s = 0; s < data.samples_in_run(run); ++s) progress.tick();
    }
    return std::move(collector.tensors());
  };

  auto worker = [&] {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return failure || next_chunk >= chunks || next_chunk < next_fold + window; });
      if (failure || next_chunk >= chunks) return;
      size_t chunk = next_chunk++;
      lock.unlock();
      auto result = profile_chunk(chunk);
      lock.lock();
      done.emplace(chunk, std::move(result));
      // Fold every chunk that is next in order; stop at the first failed one.
      for (auto it = done.find(next_fold); it != done.end() && !failure; it = done.find(next_fold)) {
        if (!it->second) {
          failure = it->second.status();
        } else {
          quant::profile::merge_tensors(profile.tensors, std::move(it->second).value());
        }
        done.erase(it);
        ++next_fold;
      }
      cv.notify_all();
    }
  };

  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) return *failure;
  if (skipped == data.samples()) return quant::Status::bad_input("every sample has NaN/Inf inputs: nothing to profile");
  if (skipped) spdlog::warn("{} of {} samples left out for NaN/Inf inputs", skipped, data.samples());
  profile.samples = static_cast<int64_t>(data.samples() - skipped);
  return quant::Status::ok();
}

}  // namespace qtool
