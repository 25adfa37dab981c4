// A process-wide pool of worker threads for splitting one kernel's work
// (GEMM tiles, conv channels) over SessionOptions::threads threads.
//
// Workers are started on first use and kept (never one thread per call). The
// calling thread always takes part, so a call makes progress even when every
// worker is busy with another caller's job: several sessions (qprofile's
// sample threads) and nested calls may use the pool at once without deadlock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace quant::kernels {

// Runs fn(t) once for every t in [0, tasks) on up to `threads` threads (the
// caller plus threads-1 workers); returns when all calls have returned. The
// tasks are cut into `threads` contiguous shares: the caller's is the first,
// the workers' follow in the order they join. Each thread takes runs of
// about tasks / (8 * threads) tasks from the front of its share, then from
// the others' (so a late or slow thread delays nobody). Kernels that split
// the same way on consecutive layers (by channel) thus find their input in
// their own core's cache. With threads <= 1
// or tasks <= 1 everything runs on the calling thread, in order. fn must not
// throw.
void parallel_for(int threads, int64_t tasks, const std::function<void(int64_t)>& fn);

// The pool's state, for tests: worker threads started, those asleep now
// (until a job is posted; not spinning for one or running one), and how many
// times a worker has gone to sleep since the pool started.
struct PoolCounters {
  int workers = 0;
  int sleeping = 0;
  int64_t sleeps = 0;
  int64_t jobs = 0;  // parallel_for calls that went to the pool (more than one task and thread)
};
PoolCounters pool_counters();

// Products (GEMMs, matrix products) smaller than both of these run on one
// thread: splitting one costs a few microseconds of its own (posting the job,
// the worker's cache misses on operands the caller just wrote, the join),
// about what a product of 2^18 multiply-adds takes on one core, so below that
// a second thread only adds time. Measured on the zoo's transformer encoder
// (16 tokens, width 64; 2-core AVX-512 VM, step_bench, 2026-12-03): its
// 16 x 64 x 128 MatMuls took 6.1 us on one thread and 7.9 on two (int8), its
// attention products (4 heads of 16 x 16 x 16, a split per head) 5.9 and
// 11.9 us (float); whole runs on two threads 467 us against 340 on one
// (float) before this floor and batches split whole (matmul.cpp), 286
// against 288 after. Products of fewer multiply-adds whose operands are
// larger (a classifier's weights on one row: 512 x 1000 floats, streamed
// from memory) still split.
inline constexpr int64_t kSplitMinMacs = int64_t{1} << 18;
inline constexpr int64_t kSplitMinBytes = int64_t{1} << 17;

// The threads worth using for a product of `macs` multiply-adds over
// operands of `bytes` bytes: `threads`, or 1 where both are below the
// floors above. The result is the same bits either way (no kernel splits
// along the depth).
inline int threads_for_product(int threads, int64_t macs, int64_t bytes) {
  return macs < kSplitMinMacs && bytes < kSplitMinBytes ? 1 : threads;
}

// Elements per piece of in_pieces: large enough that handing out a piece
// costs little, small enough that two threads share a 56x56x64 activation evenly.
inline constexpr int64_t kElementPiece = 16384;

// For element-wise work on n elements: f(first, count) for consecutive pieces
// of kElementPiece elements (the last one shorter), on up to `threads`
// threads. Only for kernels whose result per element does not depend on
// where a piece starts.
template <class F>
void in_pieces(int64_t n, int threads, F f) {
  parallel_for(threads, (n + kElementPiece - 1) / kElementPiece, [&](int64_t t) {
    const int64_t first = t * kElementPiece;
    f(first, std::min(kElementPiece, n - first));
  });
}

// For work on n independent items too large to cut (channel planes):
// f(first, count) on min(n, 4 * threads) runs of consecutive items, on up
// to `threads` threads. By parallel_for's shares, thread t mostly takes the
// t-th 1/threads of the items: the channels a GEMM split by rows gave the
// same thread the layer before, still in its core's cache.
template <class F>
void in_parts(int64_t n, int threads, F f) {
  const int64_t parts = std::min<int64_t>(n, threads > 1 ? 4 * static_cast<int64_t>(threads) : 1);
  parallel_for(threads, parts, [&](int64_t t) {
    const int64_t first = t * n / parts;
    f(first, (t + 1) * n / parts - first);
  });
}

}  // namespace quant::kernels
