#include "apps/qrun/report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace qtool {
namespace {

using Layer = quant::interp::LayerComparison::Layer;

constexpr const char* kFloatColor = "#3b6fb6";
constexpr const char* kQuantColor = "#e07b1a";
constexpr const char* kRangeColor = "#c0262d";
constexpr int kDrawnBins = 120;

std::string percent(double share) { return html::number(100 * share, 4) + "%"; }

// The float and quantized histograms of one layer on common bins, and the
// real range of its integer type as markers.
std::string layer_histogram(const Layer& l, const LayerDistributions::Pair& p) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* h : {&p.reference, &p.tested})
    if (!h->empty()) lo = std::min(lo, h->min()), hi = std::max(hi, h->max());
  const bool ranged = std::isfinite(l.range_min) && std::isfinite(l.range_max);
  if (ranged) lo = std::min(lo, l.range_min), hi = std::max(hi, l.range_max);
  html::HistogramChart c;
  c.title = l.tensor + (l.tensor == l.reference ? "" : " ~ " + l.reference);
  if (!(lo < hi)) {  // no finite value, or one value: a unit-wide window around it
    lo = std::isfinite(lo) ? lo - 0.5 : 0;
    hi = lo + 1;
  }
  const double pad = (hi - lo) * 0.02;
  c.lo = lo - pad;
  c.hi = hi + pad;
  auto counts = [&](const quant::profile::Histogram& h) {
    std::vector<double> out(kDrawnBins, 0.0);
    if (h.empty()) return out;
    const auto rebinned = quant::profile::rebin_counts(h, c.lo, c.hi, kDrawnBins);
    std::transform(rebinned.begin(), rebinned.end(), out.begin(), [](uint64_t v) { return static_cast<double>(v); });
    return out;
  };
  c.series.push_back({"float (reference)", kFloatColor, counts(p.reference)});
  c.series.push_back({l.dequantized ? "quantized (dequantized)" : "tested (float)", kQuantColor, counts(p.tested)});
  if (ranged) {
    c.markers.push_back({"quantized range", kRangeColor, l.range_min, true});
    c.markers.push_back({"quantized range", kRangeColor, l.range_max, true});
  }
  return html::histogram_svg(c);
}

}  // namespace

void LayerDistributions::attach(quant::interp::LayerComparison& comparison) {
  comparison.set_pair_hook([this](const Layer& layer, const quant::Tensor& reference, const quant::Tensor& tested) {
    Pair& p = pairs_[layer.tensor];
    p.reference.add(reference.data<float>(), reference.size());
    p.tested.add(tested.data<float>(), tested.size());
  });
}

const LayerDistributions::Pair* LayerDistributions::find(const std::string& tensor) const {
  auto it = pairs_.find(tensor);
  return it == pairs_.end() ? nullptr : &it->second;
}

void add_search_section(html::Page& page, const std::string& search_record) {
  if (search_record.empty()) return;
  page.heading("Mixed precision: qconvert's accuracy search");
  const auto j = nlohmann::json::parse(search_record, nullptr, false);
  const bool readable = j.is_object() && j.contains("moved") && j["moved"].is_array() && j.contains("goal") &&
                        j["goal"].is_object() && j.contains("moved_to") && j["moved_to"].is_string();
  if (!readable) {
    page.paragraph("The model's qtool.search record is not readable; its decisions are not shown.");
    return;
  }
  auto text = [](const nlohmann::json& v) { return v.is_number() ? html::number(v.get<double>()) : v.dump(); };
  const auto& goal = j["goal"];
  page.paragraph("The conversion missed its accuracy target, so the search moved the fewest layers it could to a higher "
                 "precision: their activations to " + j["moved_to"].get<std::string>() +
                 " (float: the layer is not quantized at all), ranked by the noise each adds alone.");
  page.facts({{"target", (goal.contains("flag") ? goal["flag"].get<std::string>() : "") + " " +
                             (goal.contains("value") ? text(goal["value"]) : "")},
              {"as converted", j.contains("before") ? text(j["before"]) : "-"},
              {"after the search", j.contains("after") ? text(j["after"]) : "-"},
              {"met", j.value("met", false) ? "yes" : "no"},
              {"layers moved", std::to_string(j["moved"].size()) + " to " + j["moved_to"].get<std::string>()}});
  html::Table t;
  t.caption = "Layers moved (each with its fused activation), most harmful first";
  t.header = {"layer", "moved to"};
  t.numeric = {false, false};
  for (const auto& m : j["moved"]) t.rows.push_back({m.is_string() ? m.get<std::string>() : m.dump(), j["moved_to"].get<std::string>()});
  page.table(t);
}

html::Page per_layer_page(const std::vector<std::pair<std::string, std::string>>& facts, const std::vector<Layer>& layers,
                          const LayerDistributions& distributions) {
  html::Page page("qrun per-layer report");
  page.facts(facts);
  std::vector<const Layer*> in_order;
  for (const auto& l : layers) in_order.push_back(&l);
  std::sort(in_order.begin(), in_order.end(), [](const Layer* a, const Layer* b) { return a->order < b->order; });

  page.heading("SNR per layer, in execution order");
  page.paragraph("Each quantized tensor (dequantized) against its float twin in the reference model, over all samples. "
                 "Lower is worse; the first layer that drops is where the error starts.");
  html::BarChart chart{"SNR per layer (dB)", "SNR (dB)", {}, {{"SNR vs float", kFloatColor, {}, {}}}};
  for (const Layer* l : in_order) {
    chart.categories.push_back(l->tensor);
    chart.series[0].values.push_back(l->stats.snr_db());
  }
  page.chart(html::bar_chart_svg(chart));

  html::Table t;
  t.caption = "Every paired tensor, in execution order (rank 1 = worst SNR)";
  t.header = {"order", "rank", "tensor", "float twin", "SNR (dB)", "cosine", "max abs error", "clipped", "quantized range"};
  t.numeric = {true, true, false, false, true, true, true, true, false};
  for (const Layer* l : in_order) {
    const size_t rank = static_cast<size_t>(l - layers.data()) + 1;
    const bool ranged = std::isfinite(l->range_min);
    t.rows.push_back({std::to_string(l->order), std::to_string(rank), l->tensor, l->reference, html::number(l->stats.snr_db()),
                      html::number(l->stats.cosine(), 6), html::number(l->stats.max_abs_error()),
                      ranged ? percent(l->clipped_share()) : "-",
                      ranged ? "[" + html::number(l->range_min) + ", " + html::number(l->range_max) + "]" : "float"});
  }
  page.table(t);

  page.heading("Worst layers: float vs quantized values");
  page.paragraph("Histograms of the float model's values (blue) and the quantized model's dequantized values (orange), "
                 "counts on a log scale, with the range the integer type represents (red, dashed). Clipped: the share "
                 "of float values outside that range, which quantization saturates.");
  size_t drawn = 0;
  for (const auto& l : layers) {
    if (drawn == kWorstLayersDrawn) break;
    const auto* p = distributions.find(l.tensor);
    if (!p) continue;
    page.heading(l.tensor + ": SNR " + html::number(l.stats.snr_db()) + " dB", 3);
    if (std::isfinite(l.range_min))
      page.paragraph("clipped: " + percent(l.clipped_share()) + " of " + std::to_string(l.stats.count()) +
                     " float values outside the quantized range [" + html::number(l.range_min, 6) + ", " +
                     html::number(l.range_max, 6) + "]");
    else
      page.paragraph("a float tensor of the tested model: no quantized range");
    page.chart(layer_histogram(l, *p));
    ++drawn;
  }
  return page;
}

html::Page sensitivity_page(const std::vector<std::pair<std::string, std::string>>& facts, const SensitivityResult& r) {
  html::Page page("qrun sensitivity report");
  page.facts(facts);
  const std::string full = " [" + r.method + "]", alone = " [layer-alone]";
  page.paragraph("Method " + r.method + ": each variant of the model is run in full on every sample and its outputs " +
                 "compared with the float model's. Method layer-alone: the layer alone, on the float model's inputs " +
                 "to it, against the float model's output tensor (no full run).");

  std::vector<const LayerSensitivity*> in_order;
  for (const auto& l : r.layers) in_order.push_back(&l);
  std::sort(in_order.begin(), in_order.end(), [](const auto* a, const auto* b) { return a->order < b->order; });
  page.heading("Per layer, in execution order");
  html::BarChart chart{"Output SNR per layer (dB)", "SNR (dB)", {}, {}};
  chart.series = {{"only this layer quantized" + full, "#e07b1a", {}, {}},
                  {"only this layer float" + full, "#3b6fb6", {}, {}},
                  {"layer alone" + alone, "#5a9e4b", {}, {}}};
  for (const auto* l : in_order) {
    chart.categories.push_back(l->node);
    chart.series[0].values.push_back(l->only_quantized.error.snr_db());
    chart.series[1].values.push_back(l->only_float.error.snr_db());
    chart.series[2].values.push_back(l->alone.snr_db());
    chart.series[2].absent.push_back(!l->alone_skipped.empty());
  }
  page.chart(html::bar_chart_svg(chart));

  page.heading("Ranking, most sensitive first");
  page.paragraph("Ranked by the output SNR with only the layer quantized. \"Gain kept float\": how much the output SNR "
                 "rises over the all-quantized model (" + html::number(r.all_quantized.error.snr_db()) +
                 " dB) when only this layer stays float; the layers with the largest gain are the ones to keep float "
                 "(qconvert --exclude-node NAME, or qconvert --min-snr to have them chosen).");
  html::Table t;
  t.header = {"rank",
              "layer",
              "op",
              "order",
              "only quantized: SNR (dB)" + full,
              "only quantized: top-1 agree" + full,
              "only float: SNR (dB)" + full,
              "only float: top-1 agree" + full,
              "gain kept float (dB)" + full,
              "layer alone: SNR (dB)" + alone,
              "constants kept quantized"};
  t.numeric = {true, false, false, true, true, true, true, true, true, true, true};
  const double all_q = r.all_quantized.error.snr_db();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    t.rows.push_back({std::to_string(i + 1), l.node, l.op_type, std::to_string(l.order),
                      html::number(l.only_quantized.error.snr_db()), percent(l.only_quantized.agreement()),
                      html::number(l.only_float.error.snr_db()), percent(l.only_float.agreement()),
                      html::number(l.only_float.error.snr_db() - all_q),
                      l.alone_skipped.empty() ? html::number(l.alone.snr_db()) : "skipped: " + l.alone_skipped,
                      std::to_string(l.kept_constants)});
  }
  page.table(t);
  return page;
}

}  // namespace qtool
