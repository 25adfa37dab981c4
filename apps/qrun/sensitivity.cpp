#include "apps/qrun/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <set>

#include "apps/common/progress.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/quant_points.h"
#include "libquant/tune/layer_alone.h"

namespace qtool {
namespace {

using quant::Expected;
using quant::Status;
using quant::Tensor;

std::string layer_name(const quant::ir::Node& n, size_t index) {
  return n.name.empty() ? n.op_type + " #" + std::to_string(index) : n.name;
}

nlohmann::json number(double v) {
  if (std::isnan(v)) return "nan";
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(v > 0 ? "inf" : "-inf");
}

nlohmann::json score_json(const VariantScore& s) {
  return {{"snr_db", number(s.error.snr_db())}, {"cosine", number(s.error.cosine())}, {"top1_agreement", s.agreement()}};
}

}  // namespace

Expected<SensitivityResult> measure_sensitivity(const SensitivityInputs& in) {
  SensitivityResult r;
  r.samples = static_cast<int64_t>(in.samples.size());
  QT_ASSIGN_OR_RETURN(auto model, quant::onnx_io::load_model(in.model_path));
  QT_ASSIGN_OR_RETURN(auto layers, quant::passes::find_quant_layers(*model));
  if (layers.empty()) return Status::bad_input(in.model_path + ": no quantized layer (no node reads a DequantizeLinear)");
  QT_ASSIGN_OR_RETURN(auto alone, quant::tune::LayerAlone::create(*model, *in.reference, in.setup));
  std::vector<std::vector<Tensor>> inputs;
  for (const auto& sample : in.samples) {
    QT_ASSIGN_OR_RETURN(auto x, quant::io::load_sample(sample, in.input_names));
    inputs.push_back(std::move(x));
  }
  // Inputs and float outputs once, for every variant; the float pass feeds
  // the layer-alone measurements too.
  auto evaluator = quant::tune::Evaluator::create(*in.reference, std::move(inputs), {}, in.setup, alone->reference_observer(),
                                                  [&] { return alone->end_sample(); });
  if (!evaluator) return evaluator.status().with_context("reference");
  const quant::passes::FloatConstant float_constant = quant::passes::constants_of(*in.reference);
  // Scores the model with the layers in `float_layers` made float.
  auto score = [&](const std::set<size_t>& float_layers, VariantScore& out, int* kept) -> Status {
    QT_ASSIGN_OR_RETURN(auto g, quant::onnx_io::load_model(in.model_path));
    QT_ASSIGN_OR_RETURN(auto own, quant::passes::find_quant_layers(*g));
    const auto made = quant::passes::make_layers_float(*g, own, float_layers, float_constant);
    if (kept) *kept = made.kept_constants;
    auto scored = (*evaluator)->evaluate(std::move(g));
    if (!scored) return scored.status().with_context(in.model_path);
    ++r.model_runs;
    out = std::move(scored).value();
    return Status::ok();
  };
  Progress progress("sensitivity", 2 * layers.size() + 1, in.quiet);
  QT_RETURN_IF_ERROR(score({}, r.all_quantized, nullptr));
  progress.tick();
  std::set<size_t> all;
  for (size_t i = 0; i < layers.size(); ++i) all.insert(i);
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerSensitivity l;
    l.node = layer_name(*layers[i].node, i);
    l.op_type = layers[i].node->op_type;
    l.order = static_cast<int>(i);
    l.alone = alone->layers()[i].stats;
    l.alone_skipped = alone->layers()[i].skipped;
    std::set<size_t> others = all;
    others.erase(i);
    QT_RETURN_IF_ERROR(score(others, l.only_quantized, nullptr));
    progress.tick();
    QT_RETURN_IF_ERROR(score({i}, l.only_float, &l.kept_constants));
    progress.tick();
    r.layers.push_back(std::move(l));
  }
  // Most sensitive first; a NaN SNR (non-finite outputs) counts as worst.
  auto key = [](const LayerSensitivity& l) {
    const double snr = l.only_quantized.error.snr_db();
    return std::isnan(snr) ? -std::numeric_limits<double>::infinity() : snr;
  };
  std::stable_sort(r.layers.begin(), r.layers.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return r;
}

void print_sensitivity(const SensitivityResult& r) {
  std::printf("sensitivity (%zu layers, %lld samples, %lld model runs): \"only\" columns by method %s (a full model "
              "run each), \"layer alone\" by method layer-alone (the layer on the float model's inputs)\n",
              r.layers.size(), static_cast<long long>(r.samples), static_cast<long long>(r.model_runs), r.method.c_str());
  std::printf("all layers quantized: SNR %.2f dB, top-1 agreement %.2f%%\n", r.all_quantized.error.snr_db(),
              100.0 * r.all_quantized.agreement());
  std::printf("  %-23s  %-23s  %-11s\n", "only this layer quantized", "only this layer float", "layer alone");
  std::printf("  %9s %13s  %9s %13s  %11s %5s  %s\n", "SNR dB", "top-1 agree", "SNR dB", "top-1 agree", "SNR dB", "order",
              "layer");
  for (const auto& l : r.layers) {
    char alone[32] = "          -";
    if (l.alone_skipped.empty()) std::snprintf(alone, sizeof alone, "%11.2f", l.alone.snr_db());
    std::printf("  %9.2f %12.2f%%  %9.2f %12.2f%%  %s %5d  %s (%s)%s\n", l.only_quantized.error.snr_db(),
                100.0 * l.only_quantized.agreement(), l.only_float.error.snr_db(), 100.0 * l.only_float.agreement(), alone,
                l.order, l.node.c_str(), l.op_type.c_str(), l.kept_constants ? " *" : "");
  }
  for (const auto& l : r.layers)
    if (l.kept_constants) {
      std::printf("* constants without a float twin in the reference stay quantized when the layer is made float\n");
      break;
    }
}

nlohmann::json sensitivity_json(const SensitivityResult& r) {
  nlohmann::json j = {{"method", r.method}, {"samples", r.samples}, {"model_runs", r.model_runs},
                      {"all_quantized", score_json(r.all_quantized)}};
  j["layers"] = nlohmann::json::array();
  for (const auto& l : r.layers)
    j["layers"].push_back({{"node", l.node}, {"op_type", l.op_type}, {"order", l.order},
                           {"only_quantized", score_json(l.only_quantized)}, {"only_float", score_json(l.only_float)},
                           {"kept_constants", l.kept_constants}, {"method", r.method},
                           {"alone", l.alone_skipped.empty()
                                         ? nlohmann::json{{"snr_db", number(l.alone.snr_db())},
                                                          {"cosine", number(l.alone.cosine())}, {"method", "layer-alone"}}
                                         : nlohmann::json{{"skipped", l.alone_skipped}, {"method", "layer-alone"}}}});
  return j;
}

}  // namespace qtool
