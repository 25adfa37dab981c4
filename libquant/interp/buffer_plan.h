// Memory planning for a Session: which activation values may share one buffer.
//
// Prepare once, run many (DESIGN "Interpreter"): the plan is made at prepare
// time from the execution order. A value lives from the step that produces it
// to the last step that reads it, both included, so a step's output never
// shares memory with one of its own inputs. Values share a buffer only when
// their lifetimes are disjoint and their sizes are equal (same `size_class`,
// e.g. one per (dtype, element count) of a statically shaped value): a shared
// buffer is then handed from one value to the next without reallocation.
// The buffers themselves live across runs (Session), so a steady-state run
// allocates nothing for planned values.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace quant::interp {

struct BufferUse {
  int64_t first = 0;       // producing step
  int64_t last = 0;        // last reading step (>= first)
  int64_t size_class = 0;  // only uses of one size class share a buffer; < 0: never shares
};

struct BufferPlan {
  std::vector<int> buffer_of;  // per use
  int buffer_count = 0;
};

// Greedy interval colouring in order of `first`: each use takes a free
// buffer of its size class (one whose previous user's last step is before
// this use's first step), else a new one. Optimal per size class (interval
// graphs): the buffer count of a class is its largest number of
// simultaneously live uses.
BufferPlan plan_buffers(std::span<const BufferUse> uses);

}  // namespace quant::interp
