#include "core/runtime/thread_pool.h"

#include <atomic>
#include <numeric>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

TEST(ThreadPool, RunsEveryScheduledTask) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(2);
    absl::BlockingCounter done(100);
    for (int i = 0; i < 100; ++i) {
      pool.Schedule([&] {
        count.fetch_add(1);
        done.DecrementCount();
      });
    }
    done.Wait();
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
  absl::BlockingCounter done(1);
  pool.Schedule([&] {
    pool.ParallelFor(50, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    done.DecrementCount();
  });
  done.Wait();
  EXPECT_EQ(sum.load(), 50);
}

}  // namespace
}  // namespace quantd
