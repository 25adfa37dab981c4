// The search of qconvert's accuracy targets (--min-snr, --max-drop,
// --min-agreement): the fewest layers moved out of 8-bit quantization until
// the target holds, within a fixed number of full-model evaluations whatever
// the layer count.
//
//  1. Evaluate the conversion as it is; done if it meets the target.
//  2. Evaluate with every candidate moved; if even that misses, stop: the
//     target cannot be met (the caller writes that model and the shortfall).
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
  std::string what;                 // "as converted", "all moved", "bisect k=3", "drop NAME"
  std::vector<std::string> moved;
  double metric = 0;
  bool meets = false;
};

struct SearchResult {
  bool met = false;
  std::vector<std::string> moved;   // the chosen set, in ranked order
  double before = 0, after = 0;     // the metric as converted, and with `moved`
  std::vector<SearchStep> steps;
};

struct SearchGoal {
  std::function<bool(double)> meets;
  int budget = 20;                  // full evaluations at most (>= 2)
};

// `ranked`: the candidates, most harmful first. `evaluate(moved)`: the
// metric with those moved; an error stops the search.
Expected<SearchResult> search_fewest(const std::vector<std::string>& ranked, const SearchGoal& goal,
                                     const std::function<Expected<double>(const std::vector<std::string>&)>& evaluate);

}  // namespace quant::tune
