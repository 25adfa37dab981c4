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
  const std::function<void(int64_t)>* fn;
  int64_t tasks;
  int helpers_wanted;  // workers that may join (threads - 1)
  int helpers_joined = 0;
  int active = 0;  // workers currently running tasks of this job (guarded by the pool mutex)
  std::atomic<int64_t> next{0};

  void run_tasks() {
    for (int64_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) (*fn)(t);
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

  void run(int threads, int64_t tasks, const std::function<void(int64_t)>& fn) {
    Job job{&fn, tasks, std::min(threads - 1, kMaxWorkers)};
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (static_cast<int>(workers_.size()) < job.helpers_wanted) workers_.emplace_back([this] { worker_loop(); });
      queue_.push_back(&job);
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
      wake = sleeping_ > 0;
    }
    if (wake) work_cv_.notify_all();
    job.run_tasks();
    std::unique_lock<std::mutex> lock(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
    done_cv_.wait(lock, [&] { return job.active == 0; });
  }

 private:
  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!stop_ && queue_.empty()) {
        // A network's kernels come one after another, a few microseconds
        // apart: spin a while for the next job before sleeping, as waking a
        // sleeping thread (futex, scheduler) costs more than a small kernel.
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + kSpin;
        while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) cpu_relax();
        lock.lock();
        ++sleeping_;
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        --sleeping_;
      }
      if (stop_) return;
      Job* job = queue_.front();
      ++job->active;
      if (++job->helpers_joined >= job->helpers_wanted) queue_.pop_front();
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
      lock.unlock();
      job->run_tasks();
      lock.lock();
      if (--job->active == 0) done_cv_.notify_all();
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

}  // namespace quant::kernels
