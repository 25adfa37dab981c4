#include "libquant/interp/buffer_plan.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>
#include <queue>

namespace quant::interp {

BufferPlan plan_buffers(std::span<const BufferUse> uses) {
  BufferPlan plan;
  plan.buffer_of.assign(uses.size(), -1);
  std::vector<size_t> order(uses.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return uses[a].first < uses[b].first; });
  const auto new_buffer = [&](int64_t bytes) {
    plan.capacity.push_back(bytes);
    return plan.buffer_count++;
  };
  // Per size class: buffers in use, as (last step, buffer) with the earliest end on top.
  using Busy = std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>, std::greater<>>;
  std::map<int64_t, Busy> busy;
  std::map<int64_t, std::vector<int>> free_buffers;  // in the order they were freed
  for (size_t u : order) {
    const BufferUse& use = uses[u];
    assert(use.last >= use.first && use.bytes >= 0);
    if (use.size_class < 0) {
      plan.buffer_of[u] = new_buffer(use.bytes);
      continue;
    }
    Busy& b = busy[use.size_class];
    std::vector<int>& fr = free_buffers[use.size_class];
    while (!b.empty() && b.top().first < use.first) {
      fr.push_back(b.top().second);
      b.pop();
    }
    int id;
    if (fr.empty()) {
      id = new_buffer(use.bytes);
    } else {
      // Best fit, the last freed of equal ones; else the largest (the first
      // freed of equal ones), grown.
      const auto cap_of = [&](size_t i) { return plan.capacity[static_cast<size_t>(fr[i])]; };
      size_t fit = fr.size(), largest = fr.size() - 1;
      for (size_t i = fr.size(); i-- > 0;) {
        if (cap_of(i) >= use.bytes && (fit == fr.size() || cap_of(i) < cap_of(fit))) fit = i;
        if (cap_of(i) >= cap_of(largest)) largest = i;
      }
      const size_t pick = fit < fr.size() ? fit : largest;
      id = fr[pick];
      fr.erase(fr.begin() + static_cast<std::ptrdiff_t>(pick));
      int64_t& cap = plan.capacity[static_cast<size_t>(id)];
      cap = std::max(cap, use.bytes);
    }
    plan.buffer_of[u] = id;
    b.emplace(use.last, id);
  }
  return plan;
}

}  // namespace quant::interp
