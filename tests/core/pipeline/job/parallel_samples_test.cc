#include "core/pipeline/job/parallel_samples.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;

class RecordingSink : public ProgressSink {
 public:
  void Report(const Progress& p) override {
    std::lock_guard<std::mutex> lock(mu_);
    reports_.push_back(absl::StrCat(p.stage, " ", p.fraction, " ", p.message));
  }
  std::vector<std::string> reports() {
    std::lock_guard<std::mutex> lock(mu_);
    return reports_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> reports_;
};

SampleProgress Counting(ProgressSink* sink, int64_t every) {
  return {sink, "calibrate",
          [](int64_t d, int64_t n) { return absl::StrCat(d, "/", n); }, every};
}

TEST(ParallelForSamplesTest, EveryIndexRunsOnceWhateverThePool) {
  for (int threads : {0, 1, 3}) {
    ThreadPool pool(threads);
    std::vector<int> runs(100, 0);
    ASSERT_TRUE(ParallelForSamples(100, &pool, nullptr, {}, [&](int64_t i) {
                  ++runs[i];
                  return absl::OkStatus();
                }).ok());
    EXPECT_EQ(runs, std::vector<int>(100, 1)) << threads << " threads";
  }
}

TEST(ParallelForSamplesTest, ReturnsTheFirstErrorInIndexOrder) {
  ThreadPool pool(3);
  absl::Status status =
      ParallelForSamples(50, &pool, nullptr, {}, [](int64_t i) {
        if (i == 7 || i == 30) return absl::InternalError(absl::StrCat(i));
        return absl::OkStatus();
      });
  EXPECT_EQ(status, absl::InternalError("7"));
}

TEST(ParallelForSamplesTest, CancelledItemsDoNotRun) {
  CancellationToken cancel;
  cancel.Cancel();
  int runs = 0;
  absl::Status status =
      ParallelForSamples(5, nullptr, &cancel, {}, [&](int64_t) {
        ++runs;
        return absl::OkStatus();
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(runs, 0);
}

TEST(ParallelForSamplesTest, ReportsInCountingOrderEveryKthAndTheLast) {
  RecordingSink sink;
  ThreadPool pool(3);
  ASSERT_TRUE(
      ParallelForSamples(10, &pool, nullptr, Counting(&sink, 4), [](int64_t) {
        return absl::OkStatus();
      }).ok());
  EXPECT_THAT(sink.reports(),
              ElementsAre("calibrate 0.4 4/10", "calibrate 0.8 8/10",
                          "calibrate 1 10/10"));
}

TEST(ParallelForSamplesTest, FailedItemsAreNotCounted) {
  RecordingSink sink;
  absl::Status status = ParallelForSamples(
      3, nullptr, nullptr, Counting(&sink, 1), [](int64_t i) {
        return i == 1 ? absl::InternalError("bad") : absl::OkStatus();
      });
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(sink.reports(),
              ElementsAre("calibrate 0.333333 1/3", "calibrate 0.666667 2/3"));
}

}  // namespace
}  // namespace quantd
