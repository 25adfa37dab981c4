#include "libquant/kernels/threadpool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace quant::kernels {
namespace {

// One parallel_for call. Lives on the caller's stack; the caller leaves only
// when it is off the queue and no worker is inside it any more.
struct Job {
  // Tasks [begin, end) of one participant's share, taken from the front.
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };

  Job(const std::function<void(int64_t)>* f, int64_t n, int threads)
      : fn(f), tasks(n), helpers_wanted(threads - 1), shares(static_cast<size_t>(threads)) {
    grain = std::max<int64_t>(1, tasks / (8 * static_cast<int64_t>(threads)));
    for (int s = 0; s < threads; ++s) {
      shares[static_cast<size_t>(s)].next.store(tasks * s / threads, std::memory_order_relaxed);
      shares[static_cast<size_t>(s)].end = tasks * (s + 1) / threads;
    }
  }

  const std::function<void(int64_t)>* fn;
  int64_t tasks;
  int64_t grain;       // tasks taken per visit to a share's counter
  int helpers_wanted;  // workers that may join (threads - 1)
  int helpers_joined = 0;
  // Workers running tasks of this job. Joining happens under the pool mutex;
  // leaving does not, so the caller can spin on it (see Pool::run).
  std::atomic<int> active{0};
  std::vector<Share> shares;

  // Participant `slot` (the caller 0, workers 1, 2, ... in joining order)
  // runs its own share first, then helps with the others'.
  void run_tasks(int slot) {
    const size_t n = shares.size();
    for (size_t i = 0; i < n; ++i) {
      Share& sh = shares[(static_cast<size_t>(slot) + i) % n];
      for (int64_t t0 = sh.next.fetch_add(grain); t0 < sh.end; t0 = sh.next.fetch_add(grain))
        for (int64_t t = t0, end = std::min(sh.end, t0 + grain); t < end; ++t) (*fn)(t);
    }
  }
};

// Far above any useful --threads on one machine; keeps a hostile value from
// starting thousands of threads.
constexpr int kMaxWorkers = 256;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  PoolCounters counters() {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<int>(workers_.size()), sleeping_, sleeps_, posted_};
  }

  void run(int threads, int64_t tasks, const std::function<void(int64_t)>& fn) {
    // Kernels split into as many tasks as they have independent pieces
    // (a depthwise conv: one per channel, under a microsecond each on late
    // layers). Each visit to a shared counter moves its cache line between
    // cores, which costs more than such a task: threads take runs of tasks,
    // about 8 runs per thread, still enough to even out unequal tasks and a
    // thread that joins late. Per-thread shares keep each thread on the same
    // channels from one layer to the next: mobilenet_v2 int8's depthwise
    // convs took 690-705 us in all instead of 763-833 us with one counter
    // (2 threads, sum of per-op minimum times, three runs each).
    Job job(&fn, tasks, std::min(threads, kMaxWorkers + 1));
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (static_cast<int>(workers_.size()) < job.helpers_wanted) workers_.emplace_back([this] { worker_loop(); });
      queue_.push_back(&job);
      ++posted_;
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
      wake = sleeping_ > 0;
    }
    if (wake) work_cv_.notify_all();
    job.run_tasks(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find(queue_.begin(), queue_.end(), &job);
      if (it != queue_.end()) queue_.erase(it);
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
    }
    // No worker joins from here on. The ones inside are finishing their last
    // task, typically a few microseconds away: spin for them first, as a
    // futex sleep and wake-up costs about as much as a small kernel.
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (job.active.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) cpu_relax();
    if (job.active.load(std::memory_order_acquire) == 0) return;
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return job.active.load(std::memory_order_acquire) == 0; });
  }

 private:
  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      while (!stop_ && queue_.empty()) {
        // A network's kernels come one after another, a few microseconds
        // apart: spin a while for the next job before sleeping, as waking a
        // sleeping thread (futex, scheduler) costs more than a small kernel.
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + kSpin;
        while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) cpu_relax();
        lock.lock();
        if (!queue_.empty() || stop_) break;
        // Sleep until a job is posted, and then spin again even if that job
        // is already gone (its caller ran every task before this thread was
        // up, as with most small jobs: a futex wake-up takes far longer).
        // Waiting for a job still queued instead kept such a worker asleep
        // through every later call that was over before it woke, each call
        // paying the wake-up (12-15 us of the caller's time on this VM):
        // 5000 calls of two tasks (2 us and none) 150 us apart took 13.1 us
        // each so (median; 90th percentile 18.7) and 2.9 us (3.7) with this;
        // 50 and 100 us apart, 90th percentiles of 14.3 and 15.5 us against
        // 3.2 and 3.4 (a copy of the pool, AVX-512 VNNI host).
        ++sleeping_;
        ++sleeps_;
        const int64_t posted = posted_;
        work_cv_.wait(lock, [&] { return stop_ || posted_ != posted; });
        --sleeping_;
      }
      if (stop_) return;
      Job* job = queue_.front();
      job->active.fetch_add(1, std::memory_order_relaxed);
      const int slot = ++job->helpers_joined;
      if (slot >= job->helpers_wanted) queue_.pop_front();
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
      lock.unlock();
      job->run_tasks(slot);
      // The caller may return (and its Job go out of scope) as soon as this
      // makes active 0: touch nothing of the job after it. Notifying under
      // the mutex pairs with the caller's predicate check under it, so a
      // caller that stopped spinning cannot miss the wake-up.
      const bool last = job->active.fetch_sub(1, std::memory_order_acq_rel) == 1;
      lock.lock();
      if (last) done_cv_.notify_all();
    }
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  static constexpr std::chrono::microseconds kSpin{200};

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), readable without the mutex
  int sleeping_ = 0;            // workers waiting on work_cv_ (guarded by mu_)
  int64_t posted_ = 0;          // jobs ever queued (guarded by mu_)
  int64_t sleeps_ = 0;          // times a worker went to sleep (guarded by mu_)
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int threads, int64_t tasks, const std::function<void(int64_t)>& fn) {
  if (threads <= 1 || tasks <= 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  pool().run(static_cast<int>(std::min<int64_t>(threads, tasks)), tasks, fn);
}

PoolCounters pool_counters() { return pool().counters(); }

}  // namespace quant::kernels
