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

// CPU time of the whole process (every kernel thread), and wall time, of each run.
struct Times {
  double cpu_ms = 0;
  std::vector<double> wall_ms;

  template <class Run>
  quant::Status add(Run&& run) {
    const std::clock_t cpu = std::clock();
    const auto wall = std::chrono::steady_clock::now();
    QT_RETURN_IF_ERROR(run());
    wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count());
    cpu_ms += 1000.0 * static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;
    return quant::Status::ok();
  }
  double median_ms() {
    std::sort(wall_ms.begin(), wall_ms.end());
    return wall_ms.empty() ? 0 : wall_ms[wall_ms.size() / 2];
  }
};

}  // namespace

quant::Status bench_profile(const quant::interp::Session& session, const DataReader& data, int bins, int runs,
                            const std::string& model_path) {
  quant::profile::Collector collector(session.graph(), bins);
  const quant::interp::ObserveBodies bodies;  // values inside If/Loop/Scan bodies too, as qprofile profiles them
  auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
    collector.observe(v, t, quant::interp::body_scope());
  };
  Times plain, profiled;
  size_t profiled_samples = 0, measured_samples = 0;
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
    for (int r = 0; r < runs; ++r) {
      QT_RETURN_IF_ERROR(plain.add([&] { return once(false); }));
      QT_RETURN_IF_ERROR(profiled.add([&] { return once(true); }));
    }
    profiled_samples += samples * static_cast<size_t>(runs + 1);
    measured_samples += samples * static_cast<size_t>(runs);
  }
  uint64_t values = 0;  // every value the histograms were given, finite or not
  for (const auto& [name, p] : collector.tensors()) values += p.hist.count() + p.hist.nan_count() + p.hist.inf_count();
  const double per_sample = static_cast<double>(measured_samples);
  const double values_per_sample = static_cast<double>(values) / static_cast<double>(profiled_samples);
  const double extra_ms = (profiled.cpu_ms - plain.cpu_ms) / per_sample;
  std::printf(
      "bench: profiled %.3f ms per sample (cpu; wall median %.3f ms per run), unprofiled %.3f ms (cpu; wall median "
      "%.3f ms), profiling %.3f ms per sample = %.3f ns per profiled value (%.0f values per sample), %zu runs, %d "
      "threads, isa %s\n",
      profiled.cpu_ms / per_sample, profiled.median_ms(), plain.cpu_ms / per_sample, plain.median_ms(), extra_ms,
      1e6 * extra_ms / values_per_sample, values_per_sample, profiled.wall_ms.size(), session.options().threads,
      quant::kernels::effective_isa().c_str());
  return quant::Status::ok();
}

}  // namespace qtool
