// ThreadPool: a fixed set of worker threads with a FIFO queue.
//
// Used for jobs (server admission bounds the queue) and for data-parallel
// kernels through ParallelFor. ParallelFor splits [0, n) into contiguous
// chunks whose boundaries depend only on n and the grain, never on the thread
// count, so callers that reduce per chunk get identical results whatever the
// pool size.
//
// Built on std::mutex / std::condition_variable / std::atomic only (Debian's
// Abseil is not TSan-instrumented, so absl::Mutex would show false races). A
// worker that runs out of tasks spins briefly before it sleeps, so the
// back-to-back ParallelFor calls of an executor run (one per op, often tens
// of microseconds each) reach a running thread instead of waking one.
#ifndef QUANTD_CORE_RUNTIME_THREAD_POOL_H_
#define QUANTD_CORE_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

// Not used here; kept because some includers still get absl::Mutex through
// this header.
#include "absl/synchronization/mutex.h"

namespace quantd {

class ThreadPool {
 public:
  // num_threads == 0 means run everything inline on the caller.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();  // Drains the queue, then joins.

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> task);

  // Runs fn(begin, end) over contiguous chunks of [0, n) of about `grain`
  // items and waits for all of them. The caller's thread works too, so this is
  // safe to call from inside a pool task (no deadlock when every worker is
  // busy).
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)>& fn);

  int num_threads() const { return static_cast<int>(workers_.size()); }
  // Number of queued tasks not yet started.
  int64_t queue_size() const;

 private:
  void WorkerLoop();
  // Spins (pause, then yield) for a bounded time while the queue is empty;
  // true if a task showed up.
  bool SpinForWork() const;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  int sleepers_ = 0;                         // guarded by mu_
  // queue_.size(), readable without mu_ by spinning workers.
  std::atomic<int64_t> queued_{0};
  std::vector<std::thread> workers_;
};

// Runs fn over [0, n) in chunks of `grain` on `pool`, or inline without one
// (or with no workers): the same chunks either way, so per-chunk reductions
// never depend on the pool.
void ParallelForChunks(ThreadPool* pool, int64_t n, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn);

}  // namespace quantd

#endif  // QUANTD_CORE_RUNTIME_THREAD_POOL_H_
