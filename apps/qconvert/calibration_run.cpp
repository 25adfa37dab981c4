#include "apps/qconvert/calibration_run.h"

#include <optional>

#include <fmt/format.h>

#include "apps/common/cli.h"
#include "libquant/interp/session.h"
#include "libquant/passes/bias_correction.h"
#include "libquant/passes/hessian_collector.h"
#include "libquant/passes/smooth_quant.h"
#include "libquant/profile/collector.h"

namespace qtool {

namespace {

// One float run of `graph` over every sample of `data`, each produced value
// handed to `observe`; `purpose` names the run in errors.
quant::Status run_float(const quant::ir::Graph& graph, const DataFlags& data, const std::string& model_path,
                        const std::string& purpose, const quant::interp::Observer& observe) {
  QT_ASSIGN_OR_RETURN(auto reader, DataReader::create(data, graph, model_path));
  quant::interp::SessionOptions options;
  options.threads = default_threads();
  options.release_mapped_weights = true;
  auto session = quant::interp::Session::create(graph, options);
  if (!session) return session.status().with_context(model_path + " (float graph for " + purpose + ")");
  for (size_t run = 0; run < reader.runs(); ++run) {
    QT_ASSIGN_OR_RETURN(auto x, reader.load(run));
    auto out = (*session)->run(x, observe);
    if (!out) return out.status().with_context(model_path + ", --data " + reader.describe(run));
  }
  return quant::Status::ok();
}

}  // namespace

quant::Expected<Calibration> run_calibration(const quant::ir::Graph& graph, const DataFlags& data,
                                             const std::string& model_path, int bins,
                                             const std::set<std::string>& profiled, bool means, bool hessians) {
  quant::profile::Collector collector(graph, bins);
  quant::passes::InputMeanCollector inputs(graph);
  std::optional<quant::passes::HessianCollector> gptq;
  if (hessians) gptq.emplace(graph);
  auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
    if (!profiled.empty()) collector.observe(v, t);
    if (means) inputs.observe(v, t);
    if (gptq) gptq->observe(v, t);
  };
  QT_RETURN_IF_ERROR(run_float(graph, data, model_path, "calibration", observe));
  Calibration c;
  for (const auto& name : profiled) {
    auto it = collector.tensors().find(name);
    if (it != collector.tensors().end()) c.tensors.emplace(name, std::move(it->second));
  }
  c.means = inputs.means();
  if (gptq) {
    c.hessians = gptq->take();
    for (const auto& s : gptq->skipped()) c.notes.push_back("gptq: '" + s + "' rounded to nearest: its input does not fit its weight");
  }
  for (const auto& s : inputs.skipped()) c.notes.push_back("bias correction: '" + s + "' left: its input does not fit its geometry");
  return c;
}

quant::Expected<std::map<std::string, double>> search_smooth_alphas(const quant::ir::Graph& graph, const DataFlags& data,
                                                                    const std::string& model_path,
                                                                    const quant::profile::Profile& profile,
                                                                    std::vector<std::string>& notes) {
  quant::passes::RowSampler sampler(graph, kSmoothRows);
  QT_RETURN_IF_ERROR(run_float(graph, data, model_path, "--smooth-quant=auto",
                               [&](const quant::ir::Value& v, const quant::Tensor& t) { sampler.observe(v, t); }));
  std::map<std::string, double> alphas;
  for (const auto& group : quant::passes::find_smooth_groups(graph)) {
    const std::string& name = group.input->name();
    auto rows = sampler.rows().find(name);
    auto prof = profile.tensors.find(name);
    if (rows == sampler.rows().end() || rows->second.rows() == 0 || prof == profile.tensors.end() ||
        static_cast<int64_t>(prof->second.channel_absmax.size()) != group.channels)
      continue;  // smooth_quant notes the missing absmax; no rows: the default alpha
    const auto choice = quant::calib::search_alpha(rows->second.values.data(), rows->second.rows(), group.channels,
                                                   quant::passes::group_weights(group), prof->second.channel_absmax);
    alphas[name] = choice.alpha;
    notes.push_back(fmt::format("smooth-quant auto: '{}' alpha {:.1f} (output squared error {:.4g}, unsmoothed {:.4g}, "
                                "on {} rows)", name, choice.alpha, choice.error, choice.error_without, rows->second.rows()));
  }
  return alphas;
}

}  // namespace qtool
