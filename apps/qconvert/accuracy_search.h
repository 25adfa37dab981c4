// qconvert's accuracy targets: --data DIR with --min-snr DB, --max-drop PP
// (with --labels) or --min-agreement F. The conversion is evaluated on DIR as
// the target computes (tune/evaluate.h); when it misses, the fewest nodes are
// moved to a higher precision until it holds (tune/search.h): to 16-bit
// activations where the target mixes them with 8-bit ones
// (activations.mixed_type), else, or when 16 bits are not enough, to float.
// Layers are ranked by how much noise each adds alone (tune/layer_alone.h,
// measured in the same float pass); at most 20 full evaluations.
#pragma once


#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/common/data.h"
#include "libquant/ir/graph.h"
#include "libquant/target/target.h"
#include "libquant/tune/search.h"

namespace CLI {
class App;  // CLI11: only references here; CLI/CLI.hpp costs ~8 s of -O2 per translation unit
}  // namespace CLI

namespace qtool {

struct SearchFlags {
  DataFlags data;
  std::string labels;
  double min_snr = 0, max_drop = 0, min_agreement = 0;
  bool has_min_snr = false, has_max_drop = false, has_min_agreement = false;
  std::string move_to = "auto";  // --move-to auto|16-bit|float
  int budget = 20;
  bool quiet = false;
  bool active() const { return has_min_snr || has_max_drop || has_min_agreement; }
};

void add_search_flags(CLI::App& app, SearchFlags& flags);
// After parsing: which flags were given, and whether they fit together.
// `calibrating`: --equalize or --bias-correction read --data (and --limit)
// as calibration data, without an accuracy target.
quant::Status check_search_flags(SearchFlags& flags, const CLI::App& app, bool dynamic, bool calibrating = false);

// Nodes moved to a higher precision: 16-bit activations of type `wide`, or
// float when `wide` is Undefined.
struct Moves {
  std::vector<std::string> nodes;
  quant::DType wide = quant::DType::Undefined;
};

struct SearchOutcome {
  quant::tune::SearchResult result;  // over candidates (layers, named by their node)
  Moves moves;                       // the nodes moved: each candidate and its fused activation
  nlohmann::json json;                        // for --report
  quant::Status gate = quant::Status::ok();   // gate_failed when the target cannot be met
};

// Builds the QDQ model with those moves (not lowered).
using BuildQuantized = std::function<quant::Expected<std::unique_ptr<quant::ir::Graph>>(const Moves& moves)>;

// `activations`: the conversion's activation type; its 16-bit twin is the
// first level when the target mixes them (and --move-to allows).
quant::Expected<SearchOutcome> run_search(const SearchFlags& flags, const quant::ir::Graph& float_graph,
                                          const quant::target::TargetSpec& target, quant::DType activations,
                                          const BuildQuantized& build);

}  // namespace qtool
