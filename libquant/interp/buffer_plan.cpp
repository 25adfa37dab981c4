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
  // Per size class: buffers in use, as (last step, buffer) with the earliest end on top.
  using Busy = std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>, std::greater<>>;
  std::map<int64_t, Busy> busy;
  std::map<int64_t, std::vector<int>> free_buffers;
  for (size_t u : order) {
    const BufferUse& use = uses[u];
    assert(use.last >= use.first);
    if (use.size_class < 0) {
      plan.buffer_of[u] = plan.buffer_count++;
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
      id = plan.buffer_count++;
    } else {
      id = fr.back();
      fr.pop_back();
    }
    plan.buffer_of[u] = id;
    b.emplace(use.last, id);
  }
  return plan;
}

}  // namespace quant::interp
