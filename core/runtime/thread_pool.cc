#include "core/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <memory>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace quantd {
namespace {

// How long an idle thread keeps polling before it blocks. An executor run
// issues one ParallelFor per op with a little serial work in between; 100 us
// covers those gaps, so workers stay awake for a whole run, yet an idle pool
// stops burning CPU almost at once.
constexpr auto kSpinFor = std::chrono::microseconds(100);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `ready` for up to kSpinFor: a few hundred pause instructions first
// (hand-offs usually land within a microsecond), then sched_yield so a
// loaded machine's other threads get the core.
template <typename Ready>
bool SpinUntil(const Ready& ready) {
  for (int i = 0; i < 256; ++i) {
    if (ready()) return true;
    CpuRelax();
  }
  const auto until = std::chrono::steady_clock::now() + kSpinFor;
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (ready()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}

// One ParallelFor call, shared with the helper tasks (which may start after
// the call returned, when every chunk was taken; they then touch nothing but
// `next`).
struct ParallelForState {
  ParallelForState(int64_t n, int64_t grain, int64_t chunks,
                   const std::function<void(int64_t, int64_t)>* fn)
      : n(n), grain(grain), chunks(chunks), fn(fn) {}

  // Claims and runs chunks until none is left.
  void Run() {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      (*fn)(c * grain, std::min(n, (c + 1) * grain));
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
        // Taking the lock orders this with the caller's check-then-wait.
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }

  bool Finished() const {
    return done.load(std::memory_order_acquire) == chunks;
  }

  const int64_t n, grain, chunks;
  const std::function<void(int64_t, int64_t)>* const fn;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  workers_.reserve(std::max(num_threads, 0));
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.store(static_cast<int64_t>(queue_.size()),
                  std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) work_cv_.notify_one();
}

int64_t ThreadPool::queue_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

bool ThreadPool::SpinForWork() const {
  return SpinUntil(
      [this] { return queued_.load(std::memory_order_acquire) > 0; });
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !stopping_) {
        lock.unlock();
        SpinForWork();
        lock.lock();
        if (queue_.empty() && !stopping_) {
          ++sleepers_;
          work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
          --sleepers_;
        }
      }
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.store(static_cast<int64_t>(queue_.size()),
                    std::memory_order_release);
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
  auto state = std::make_shared<ParallelForState>(n, grain, chunks, &fn);
  const int64_t helpers =
      std::min<int64_t>(chunks - 1, static_cast<int64_t>(workers_.size()));
  for (int64_t i = 0; i < helpers; ++i) {
    Schedule([state] { state->Run(); });
  }
  state->Run();
  // The helpers are finishing their last chunks: usually a short wait.
  if (SpinUntil([&] { return state->Finished(); })) return;
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->Finished(); });
}

void ParallelForChunks(ThreadPool* pool, int64_t n, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (pool == nullptr || pool->num_threads() == 0 || n <= grain) {
    for (int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

}  // namespace quantd
