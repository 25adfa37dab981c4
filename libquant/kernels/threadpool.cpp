#include "libquant/kernels/threadpool.h"

#include <algorithm>
#include <atomic>
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (static_cast<int>(workers_.size()) < job.helpers_wanted) workers_.emplace_back([this] { worker_loop(); });
      queue_.push_back(&job);
    }
    work_cv_.notify_all();
    job.run_tasks();
    std::unique_lock<std::mutex> lock(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    done_cv_.wait(lock, [&] { return job.active == 0; });
  }

 private:
  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job* job = queue_.front();
      ++job->active;
      if (++job->helpers_joined >= job->helpers_wanted) queue_.pop_front();
      lock.unlock();
      job->run_tasks();
      lock.lock();
      if (--job->active == 0) done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> queue_;
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
