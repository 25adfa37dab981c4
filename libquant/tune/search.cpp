#include "libquant/tune/search.h"

#include <cmath>

namespace quant::tune {

Expected<SearchResult> search_fewest(const std::vector<std::string>& ranked, const SearchGoal& goal, const Evaluate& evaluate) {
  if (goal.levels.empty()) return Status::internal("search_fewest: no level to move layers to");
  SearchResult r;
  auto meets = [&](double m) { return !std::isnan(m) && goal.meets(m); };
  size_t level = 0;
  auto step = [&](const std::string& what, std::vector<std::string> moved) -> Expected<SearchStep> {
    QT_ASSIGN_OR_RETURN(double m, evaluate(moved, level));
    SearchStep s{what, std::move(moved), level, m, meets(m)};
    r.steps.push_back(s);
    return s;
  };
  auto budget_left = [&] { return static_cast<int>(r.steps.size()) < goal.budget; };
  auto top = [&](size_t k) { return std::vector<std::string>(ranked.begin(), ranked.begin() + static_cast<long>(k)); };

  QT_ASSIGN_OR_RETURN(SearchStep first, step("as converted", {}));
  r.before = r.after = first.metric;
  if (first.meets || ranked.empty()) {
    r.met = first.meets;
    return r;
  }
  // The first level at which moving everything meets; when none does, the
  // best of them (a NaN metric is worst).
  bool found = false;
  for (level = 0; level < goal.levels.size() && !found; ++level) {
    QT_ASSIGN_OR_RETURN(SearchStep all, step("all moved to " + goal.levels[level], ranked));
    const bool better = level == 0 || (!std::isnan(all.metric) && (std::isnan(r.after) || all.metric > r.after));
    if (all.meets || better) {
      r.moved = ranked;
      r.level = level;
      r.after = all.metric;
    }
    found = all.meets;
  }
  if (!found) return r;
  level = r.level;
  r.met = true;
  size_t lo = 0, hi = ranked.size();  // top-lo misses, top-hi meets
  while (hi - lo > 1 && budget_left()) {
    const size_t mid = lo + (hi - lo) / 2;
    QT_ASSIGN_OR_RETURN(SearchStep s, step("bisect k=" + std::to_string(mid), top(mid)));
    if (s.meets) {
      hi = mid;
      r.after = s.metric;
    } else {
      lo = mid;
    }
  }
  r.moved = top(hi);
  // top(hi - 1) missed (or hi is all), so the last one added stays.
  for (size_t i = hi >= 2 ? hi - 1 : 0; i-- > 0 && budget_left();) {
    std::vector<std::string> fewer;
    for (const auto& name : r.moved)
      if (name != ranked[i]) fewer.push_back(name);
    QT_ASSIGN_OR_RETURN(SearchStep s, step("drop " + ranked[i], fewer));
    if (s.meets) {
      r.moved = std::move(fewer);
      r.after = s.metric;
    }
  }
  return r;
}

}  // namespace quant::tune
