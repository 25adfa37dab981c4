#include "apps/qprofile/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "libquant/interp/body_observer.h"
#include "libquant/kernels/cpu.h"
#include "libquant/profile/collector.h"

namespace qtool {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Each run's CPU time of the whole process (every kernel thread) per sample,
// and its wall time.
struct Times {
  std::vector<double> cpu_ms, wall_ms;

  template <class Run>
  quant::Status add(size_t samples, Run&& run) {
    const std::clock_t cpu = std::clock();
    const auto wall = std::chrono::steady_clock::now();
    QT_RETURN_IF_ERROR(run());
    wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count());
    cpu_ms.push_back(1000.0 * static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC / static_cast<double>(samples));
    return quant::Status::ok();
  }
};

}  // namespace

quant::Status bench_profile(const quant::interp::Session& session, const DataReader& data, int bins, int runs,
                            const std::string& model_path) {
  quant::profile::Collector collector(session.graph(), bins);
  const quant::interp::ObserveBodies bodies;  // values inside If/Loop/Scan bodies too, as qprofile profiles them
  // The observer's own time: the interpreter calls it on the calling thread,
  // between steps, so its wall time is CPU time of that thread.
  double observer_ms = 0;
  auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
    const auto start = std::chrono::steady_clock::now();
    collector.observe(v, t, quant::interp::body_scope());
    observer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  Times plain, profiled;
  std::vector<double> extra_ms;  // profiled minus plain, per sample, for each pair of neighbouring runs
  size_t profiled_samples = 0, measured_samples = 0;
  double measured_observer_ms = 0;
  for (size_t run = 0; run < data.runs(); ++run) {
    auto inputs = data.load(run);
    if (!inputs) return inputs.status();
    auto once = [&](bool observed) -> quant::Status {
      auto outs = observed ? session.run(*inputs, observe) : session.run(*inputs);
      if (!outs) return outs.status().with_context(model_path + ", " + data.describe(run));
      return quant::Status::ok();
    };
    const size_t samples = data.samples_in_run(run);
    QT_RETURN_IF_ERROR(once(false));  // warm-up of both
    QT_RETURN_IF_ERROR(once(true));
    const double warm_observer_ms = observer_ms;
    for (int r = 0; r < runs; ++r) {
      QT_RETURN_IF_ERROR(plain.add(samples, [&] { return once(false); }));
      QT_RETURN_IF_ERROR(profiled.add(samples, [&] { return once(true); }));
      extra_ms.push_back(profiled.cpu_ms.back() - plain.cpu_ms.back());
    }
    measured_observer_ms += observer_ms - warm_observer_ms;
    profiled_samples += samples * static_cast<size_t>(runs + 1);
    measured_samples += samples * static_cast<size_t>(runs);
  }
  uint64_t values = 0;  // every value the histograms were given, finite or not
  for (const auto& [name, p] : collector.tensors()) values += p.hist.count() + p.hist.nan_count() + p.hist.inf_count();
  const double values_per_sample = static_cast<double>(values) / static_cast<double>(profiled_samples);
  // The cost of profiling: the median over pairs of neighbouring runs of their
  // difference, so that a slow spell of a shared host, which moves whole runs,
  // shifts few pairs (the difference of the two sides' sums moved by +-1 ns
  // per value from one process to the next on resnet18); and the observer's
  // own time, which leaves out what profiling costs the kernels after it
  // (caches it evicted).
  const double extra = median(extra_ms);
  const double observer = measured_observer_ms / static_cast<double>(std::max<size_t>(measured_samples, 1));
  std::printf(
      "bench: profiled %.3f ms per sample (cpu; wall median %.3f ms per run), unprofiled %.3f ms (cpu; wall median "
      "%.3f ms), profiling %.3f ms per sample = %.3f ns per profiled value (%.0f values per sample; median of %zu "
      "paired runs; observer alone %.3f ms = %.3f ns), %zu runs, %d threads, %s\n",
      median(profiled.cpu_ms), median(profiled.wall_ms), median(plain.cpu_ms), median(plain.wall_ms), extra,
      1e6 * extra / values_per_sample, values_per_sample, extra_ms.size(), observer, 1e6 * observer / values_per_sample,
      profiled.wall_ms.size(), session.options().threads, quant::kernels::kernel_setup().c_str());
  return quant::Status::ok();
}

}  // namespace qtool
