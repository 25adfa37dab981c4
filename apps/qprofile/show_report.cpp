#include "apps/qprofile/show_report.h"

#include <algorithm>
#include <cmath>

namespace qtool {
namespace {

using quant::profile::Histogram;

constexpr int kDrawnBins = 160;

// One colour per method, in assess_methods() order (as the --plot PNGs).
constexpr const char* kMethodColors[] = {"#000000", "#1f77b4", "#d62728", "#2ca02c"};

std::string sqnr_text(double db) { return std::isinf(db) ? "inf" : html::number(db) + " dB"; }

std::string tensor_histogram(const TensorAnalysis& a) {
  const Histogram& h = a.tensor->hist;
  html::HistogramChart c;
  c.title = a.name + "  " + quant::dims_to_string(a.tensor->shape) + "  count " + std::to_string(h.count());
  const double lo = h.min(), hi = h.max();
  const double pad = lo < hi ? (hi - lo) * 0.03 : std::max(std::abs(lo) * 0.1, 1e-6);
  c.lo = lo - pad;
  c.hi = hi + pad;
  std::vector<double> counts(kDrawnBins, 0.0);
  const auto rebinned = quant::profile::rebin_counts(h, c.lo, c.hi, kDrawnBins);
  std::transform(rebinned.begin(), rebinned.end(), counts.begin(), [](uint64_t v) { return static_cast<double>(v); });
  c.series.push_back({"values", "#6e8cbe", std::move(counts)});
  for (size_t m = 0; m < a.methods.size() && m < std::size(kMethodColors); ++m) {
    const auto& r = a.methods[m].cost.range;
    const std::string& name = a.methods[m].method;
    c.markers.push_back({name, kMethodColors[m], r.min, m > 0});
    c.markers.push_back({name, kMethodColors[m], r.max, m > 0});
  }
  return html::histogram_svg(c);
}

}  // namespace

html::Page profile_page(const quant::profile::Profile& profile, const std::vector<TensorAnalysis>& tensors,
                        const ShowOptions& o) {
  html::Page page("qprofile show: " + o.profile);
  page.facts({{"profile", o.profile},
              {"model", profile.model_path},
              {"samples", std::to_string(profile.samples)},
              {"bins per histogram", std::to_string(profile.bins)},
              {"tensors", std::to_string(tensors.size())},
              {"chosen calibration", o.calibration}});
  page.heading("Ranges per tensor, hardest first");
  page.paragraph("Hardest: lowest estimated 8-bit SQNR of the range the chosen method (" + o.calibration +
                 ") picks. Clipped: the share of values outside that range.");
  html::Table t;
  t.header = {"tensor", "type", "shape", "count", "min", "max", "mean", "NaN", "Inf",
              "chosen min", "chosen max", "clipped", "SQNR"};
  t.numeric = {false, false, false, true, true, true, true, true, true, true, true, true, true};
  for (const auto& a : tensors) {
    const Histogram& h = a.tensor->hist;
    t.rows.push_back({a.name, a.tensor->dtype, quant::dims_to_string(a.tensor->shape), std::to_string(h.count()),
                      html::number(h.min(), 6), html::number(h.max(), 6), html::number(h.mean(), 6),
                      std::to_string(h.nan_count()), std::to_string(h.inf_count()), html::number(a.chosen.cost.range.min, 6),
                      html::number(a.chosen.cost.range.max, 6), html::number(100 * a.chosen.cost.clipped_share) + "%",
                      sqnr_text(a.chosen.cost.sqnr_db)});
  }
  page.table(t);
  page.heading("Histograms");
  page.paragraph("Counts on a log scale; vertical lines: the range each calibration method chooses (minmax solid, "
                 "the others dashed).");
  for (const auto& a : tensors) {
    page.heading(a.name, 3);
    if (a.tensor->hist.empty()) {
      page.paragraph("no finite values");
      continue;
    }
    html::Table m;
    m.header = {"method", "min", "max", "clipped", "SQNR"};
    m.numeric = {false, true, true, true, true};
    for (const auto& c : a.methods)
      m.rows.push_back({c.method + (c.method == a.chosen.method ? " (chosen)" : ""), html::number(c.cost.range.min, 6),
                        html::number(c.cost.range.max, 6), html::number(100 * c.cost.clipped_share) + "%",
                        sqnr_text(c.cost.sqnr_db)});
    page.table(m);
    page.chart(tensor_histogram(a));
  }
  return page;
}

}  // namespace qtool
