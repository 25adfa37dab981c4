#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "libquant/kernels/threadpool.h"

using quant::kernels::parallel_for;

TEST_CASE("parallel_for runs every task exactly once", "[kernels][threads]") {
  for (int threads : {1, 2, 4, 16}) {
    for (int64_t tasks : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
      parallel_for(threads, tasks, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
      for (auto& h : hits) CHECK(h.load() == 1);
    }
  }
}

TEST_CASE("parallel_for with one thread runs in order on the caller", "[kernels][threads]") {
  std::vector<int64_t> order;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  parallel_for(1, 5, [&](int64_t t) {
    order.push_back(t);
    same_thread = same_thread && std::this_thread::get_id() == caller;
  });
  CHECK(order == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(same_thread);
}

TEST_CASE("parallel_for uses more than one thread when asked", "[kernels][threads]") {
  // Each task waits (bounded) until another thread has started one: only
  // possible when a worker runs tasks beside the caller.
  std::atomic<int> started{0};
  std::atomic<bool> overlapped{false};
  parallel_for(2, 2, [&](int64_t) {
    started.fetch_add(1);
    for (int spin = 0; spin < 20000000 && started.load() < 2; ++spin) std::this_thread::yield();
    if (started.load() == 2) overlapped = true;
  });
  CHECK(overlapped.load());
}

TEST_CASE("parallel_for from several callers and nested calls completes", "[kernels][threads]") {
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep)
        parallel_for(3, 8, [&](int64_t t) { parallel_for(2, 4, [&](int64_t u) { sum.fetch_add(t * 4 + u); }); });
    });
  }
  for (auto& t : callers) t.join();
  // Each inner sweep adds sum_{t<8,u<4} (4t+u) = 496.
  CHECK(sum.load() == 4 * 20 * 496);
}

TEST_CASE("parallel_for gives each thread its own share, in runs", "[kernels][threads]") {
  // 1000 tasks on 2 threads: the caller's share is [0, 500), the worker's
  // [500, 1000); each takes runs of 1000 / (8 * 2) = 62 tasks from the front
  // of its share, then of the other's. So tasks change threads only where a
  // run starts: at 62 k or 500 + 62 k. The first task of each thread waits
  // (bounded) until both threads have started, so the worker surely takes
  // part: from one shared counter it would start at task 1, one task a time
  // at task 1 too, and without shares the worker would not start at 500.
  constexpr int64_t kTasks = 1000, kGrain = 62, kHalf = 500;
  std::vector<std::thread::id> ran_on(kTasks);
  std::atomic<int> started{0};
  parallel_for(2, kTasks, [&](int64_t t) {
    thread_local const void* seen = nullptr;
    if (seen != &ran_on) {
      seen = &ran_on;
      started.fetch_add(1);
      for (int spin = 0; spin < 20000000 && started.load() < 2; ++spin) std::this_thread::yield();
    }
    ran_on[static_cast<size_t>(t)] = std::this_thread::get_id();
  });
  REQUIRE(started.load() == 2);
  const auto caller = std::this_thread::get_id();
  CHECK(ran_on[0] == caller);
  CHECK(ran_on[kHalf] != caller);
  for (int64_t t = 1; t < kTasks; ++t) {
    if (ran_on[static_cast<size_t>(t)] == ran_on[static_cast<size_t>(t - 1)]) continue;
    INFO("task " << t << " ran on another thread than task " << t - 1);
    CHECK((t < kHalf ? t : t - kHalf) % kGrain == 0);
  }
}

namespace {

// Polls pred every 100 us for up to 10 s; true once it holds.
template <class Pred>
bool within_10s(Pred pred) {
  for (int i = 0; i < 100000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return pred();
}

}  // namespace

TEST_CASE("parallel_for's wake-up puts every sleeping worker back to spinning", "[kernels][threads]") {
  // A call wakes all sleeping workers; at most one joins its job (two
  // tasks), the others find it gone. Each must then spin for the next call
  // and only later sleep again, so that the next call needs no wake-up
  // (threadpool.cpp): every worker goes to sleep once more. A pool whose
  // woken workers wait on for a job still queued would count at most the
  // one that joined.
  using quant::kernels::pool_counters;
  parallel_for(4, 4, [](int64_t) {});  // three workers at least
  REQUIRE(within_10s([] {
    const auto c = pool_counters();
    return c.workers >= 3 && c.sleeping == c.workers;
  }));
  const auto before = pool_counters();
  parallel_for(2, 2, [](int64_t) {});
  const bool all_slept_again = within_10s([&] { return pool_counters().sleeps >= before.sleeps + before.workers; });
  INFO("workers " << before.workers << ", sleeps before " << before.sleeps << ", after " << pool_counters().sleeps);
  CHECK(all_slept_again);
}
