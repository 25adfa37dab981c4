// qrun --html REPORT.html: the per-layer comparison (--per-layer) or the
// sensitivity ranking (--sensitivity) as one self-contained page
// (apps/common/html_report.h).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/html_report.h"
#include "apps/qrun/sensitivity.h"
#include "libquant/interp/compare.h"
#include "libquant/profile/histogram.h"

namespace qtool {

// Histograms of every paired tensor, float (reference) and quantized
// (tested, in real values), filled through LayerComparison's pair hook as the
// samples run: constant memory per layer, whatever the sample count.
class LayerDistributions {
 public:
  static constexpr int kBins = 1024;
  // Installs the hook; `comparison` must outlive the run.
  void attach(quant::interp::LayerComparison& comparison);

  struct Pair {
    quant::profile::Histogram reference{kBins}, tested{kBins};
  };
  const Pair* find(const std::string& tensor) const;

 private:
  std::map<std::string, Pair> pairs_;
};

// How many of the worst layers get their histograms drawn.
constexpr size_t kWorstLayersDrawn = 6;

// The --per-layer page: `facts` (model, samples, output metrics) on top, the
// SNR of every layer in execution order, the table, and the float vs quantized
// histograms of the worst layers with their range clipping. `layers` worst first.
html::Page per_layer_page(const std::vector<std::pair<std::string, std::string>>& facts,
                          const std::vector<quant::interp::LayerComparison::Layer>& layers,
                          const LayerDistributions& distributions);

// The --sensitivity page: the three measurements per layer in execution
// order, and the ranking with the method each number comes from.
html::Page sensitivity_page(const std::vector<std::pair<std::string, std::string>>& facts, const SensitivityResult& result);

// The mixed-precision decisions of qconvert's accuracy search, from the
// model's `qtool.search` metadata (JSON, see apps/qconvert/accuracy_search.h):
// the goal, the metric before and after, and the layers moved and where. A
// model without the record gets nothing; an unreadable record says so.
void add_search_section(html::Page& page, const std::string& search_record);

}  // namespace qtool
