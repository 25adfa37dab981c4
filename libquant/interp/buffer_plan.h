// Memory planning for a Session: which activation values may share one buffer.
//
// Prepare once, run many (DESIGN "Interpreter"): the plan is made at prepare
// time from the execution order. A value lives from the step that produces it
// to the last step that reads it, both included, so a step's output never
// shares memory with one of its own inputs. Values share a buffer only when
// their lifetimes are disjoint and they are of one `size_class` (the Session
// puts every value of a known size in one class, whatever its type); a
// buffer holds as many bytes as the largest of its values, and is handed
// from one value to the next without reallocation. The buffers themselves
// live across runs (Session), so a steady-state run allocates nothing for
// planned values.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace quant::interp {

struct BufferUse {
  int64_t first = 0;       // producing step
  int64_t last = 0;        // last reading step (>= first)
  int64_t size_class = 0;  // only uses of one size class share a buffer; < 0: never shares
  int64_t bytes = 0;       // what the value needs
};

struct BufferPlan {
  std::vector<int> buffer_of;     // per use
  std::vector<int64_t> capacity;  // per buffer: the most bytes of its uses
  int buffer_count = 0;
};

// Greedy interval colouring in order of `first`: each use takes a free
// buffer of its size class (one whose previous user's last step is before
// this use's first step), else a new one. Optimal in count per size class
// (interval graphs): the buffer count of a class is its largest number of
// simultaneously live uses. Of the free buffers a use takes the smallest
// that holds it (best fit; of equal ones, the one freed last, whose bytes
// were read most recently and are likeliest still in cache), else the
// largest, which grows to it: the bytes a run writes stay few, so that a
// network's activations stay in the caches from one run to the next (the
// early layers of mobilenet_v2 ran 1.4x slower with a buffer per size).
BufferPlan plan_buffers(std::span<const BufferUse> uses);

}  // namespace quant::interp
