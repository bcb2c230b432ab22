#include "core/runtime/thread_pool.h"

#include <atomic>
#include <latch>
#include <numeric>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace quantd {
namespace {

TEST(ThreadPool, RunsEveryScheduledTask) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(2);
    std::latch done(100);
    for (int i = 0; i < 100; ++i) {
      pool.Schedule([&] {
        count.fetch_add(1);
        done.count_down();
      });
    }
    done.wait();
  }
  EXPECT_EQ(count.load(), 100);
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  std::vector<int> hits(1001, 0);
  pool.ParallelFor(1001, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(ThreadPool, ChunkBoundariesDoNotDependOnThreadCount) {
  auto boundaries = [](int threads) {
    ThreadPool pool(threads);
    std::vector<int> starts(100, -1);
    pool.ParallelFor(100, 9, [&](int64_t b, int64_t e) { starts[b] = e; });
    return starts;
  };
  EXPECT_EQ(boundaries(0), boundaries(1));
  EXPECT_EQ(boundaries(1), boundaries(4));
}

TEST(ThreadPool, NestedParallelForFromPoolTaskDoesNotDeadlock) {
  ThreadPool pool(1);
  std::atomic<int64_t> sum{0};
  std::latch done(1);
  pool.Schedule([&] {
    pool.ParallelFor(50, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    done.count_down();
  });
  done.wait();
  EXPECT_EQ(sum.load(), 50);
}

TEST(ThreadPool, DestructorRunsTasksStillQueued) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 200; ++i) pool.Schedule([&] { count.fetch_add(1); });
  }
  EXPECT_EQ(count.load(), 200);
}

TEST(ThreadPool, ConcurrentParallelForsEachCoverTheirRange) {
  // Several callers share one pool (concurrent executor runs): every call
  // must see each of its own items exactly once, whoever runs the chunks.
  ThreadPool pool(2);
  constexpr int kCallers = 4;
  std::vector<std::vector<int>> hits(kCallers, std::vector<int>(5000, 0));
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        pool.ParallelFor(5000, 13, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[t][i];
        });
      }
    });
  }
  for (std::thread& c : callers) c.join();
  for (const auto& h : hits) {
    for (int v : h) EXPECT_EQ(v, 20);
  }
}

TEST(ThreadPool, ParallelForSeesWritesOfEveryChunkOnReturn) {
  // Per-chunk partial sums written by whichever thread ran the chunk are all
  // visible to the caller once ParallelFor returns: 0 + 1 + ... + 9999.
  ThreadPool pool(1);
  for (int round = 0; round < 50; ++round) {
    std::vector<int64_t> partial(100, 0);
    pool.ParallelFor(10000, 100, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i;
      partial[b / 100] = s;
    });
    EXPECT_EQ(std::accumulate(partial.begin(), partial.end(), int64_t{0}),
              int64_t{9999} * 10000 / 2);
  }
}

}  // namespace
}  // namespace quantd
