// The search of qconvert's accuracy targets (--min-snr, --max-drop,
// --min-agreement): the fewest layers moved out of 8-bit quantization until
// the target holds, within a fixed number of full-model evaluations whatever
// the layer count.
//
//  1. Evaluate the conversion as it is; done if it meets the target.
//  2. Evaluate with every candidate moved to the first level (levels are the
//     precisions a layer may move to, cheapest first: 16-bit activations,
//     then float); if that misses, the next level; if even the last misses,
//     stop: the target cannot be met (the caller writes the best of those
//     models and the shortfall). The first level that meets is kept.
//  3. Bisect on k, the number of candidates moved in ranked order (most
//     harmful first, from a sensitivity pass): the smallest k that meets.
//  4. With the evaluations left, try to drop each moved layer but the last
//     one added (the bisection showed that one is needed), least harmful
//     first, keeping each drop that still meets the target.
// Every evaluation is recorded as a step. A NaN metric never meets.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libquant/core/status.h"

namespace quant::tune {

struct SearchStep {
  std::string what;                 // "as converted", "all moved to L", "bisect k=3", "drop NAME"
  std::vector<std::string> moved;
  size_t level = 0;                 // where `moved` went: an index into SearchGoal::levels
  double metric = 0;
  bool meets = false;
};

struct SearchResult {
  bool met = false;
  std::vector<std::string> moved;   // the chosen set, in ranked order
  size_t level = 0;                 // ... moved to SearchGoal::levels[level]
  double before = 0, after = 0;     // the metric as converted, and with `moved`
  std::vector<SearchStep> steps;
};

struct SearchGoal {
  std::function<bool(double)> meets;
  int budget = 20;                  // full evaluations at most (>= 1 + levels)
  std::vector<std::string> levels = {"float"};  // where moved layers may go, cheapest first
};

// `ranked`: the candidates, most harmful first. `evaluate(moved, level)`:
// the metric with those moved to levels[level]; an error stops the search.
using Evaluate = std::function<Expected<double>(const std::vector<std::string>& moved, size_t level)>;
Expected<SearchResult> search_fewest(const std::vector<std::string>& ranked, const SearchGoal& goal, const Evaluate& evaluate);

}  // namespace quant::tune
