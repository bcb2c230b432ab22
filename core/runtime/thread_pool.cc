#include "core/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "absl/synchronization/blocking_counter.h"

namespace quantd {

ThreadPool::ThreadPool(int num_threads) {
  workers_.reserve(std::max(num_threads, 0));
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
}

int64_t ThreadPool::queue_size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1 || workers_.empty()) {
    for (int64_t c = 0; c < chunks; ++c) {
      fn(c * grain, std::min(n, (c + 1) * grain));
    }
    return;
  }
  // Chunks are claimed from a shared counter by helpers and by the caller.
  struct State {
    std::atomic<int64_t> next{0};
    absl::BlockingCounter done;
    explicit State(int64_t c) : done(static_cast<int>(c)) {}
  };
  auto state = std::make_shared<State>(chunks);
  auto run = [state, n, grain, chunks, &fn] {
    for (;;) {
      const int64_t c = state->next.fetch_add(1);
      if (c >= chunks) return;
      fn(c * grain, std::min(n, (c + 1) * grain));
      state->done.DecrementCount();
    }
  };
  const int64_t helpers =
      std::min<int64_t>(chunks - 1, static_cast<int64_t>(workers_.size()));
  for (int64_t i = 0; i < helpers; ++i) Schedule(run);
  run();
  state->done.Wait();
}

}  // namespace quantd
