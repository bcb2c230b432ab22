#include "core/runtime/monotonic_progress.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

class RecordingSink final : public ProgressSink {
 public:
  void Report(const Progress& p) override {
    seen.push_back(p.stage + ":" + std::to_string(p.fraction).substr(0, 4));
  }
  std::vector<std::string> seen;
};

TEST(MonotonicProgressTest, LateReportOfAnEarlierSampleIsDropped) {
  // The report stage's evaluation threads: 3/4 arrived before 2/4.
  RecordingSink recorder;
  MonotonicProgressSink sink(&recorder);
  sink.Report({"report", 0.0, "start"});
  sink.Report({"report", 0.25, "1/4"});
  sink.Report({"report", 0.75, "3/4"});
  sink.Report({"report", 0.5, "2/4"});
  sink.Report({"report", 1.0, "4/4"});
  EXPECT_THAT(recorder.seen,
              ::testing::ElementsAre("report:0.00", "report:0.25",
                                     "report:0.75", "report:1.00"));
}

TEST(MonotonicProgressTest, ANewStageStartsFromItsOwnFirstReport) {
  RecordingSink recorder;
  MonotonicProgressSink sink(&recorder);
  sink.Report({"calibrate", 1.0, "done"});
  sink.Report({"select", 0.0, "start"});
  sink.Report({"select", 0.5, "half"});
  EXPECT_THAT(
      recorder.seen,
      ::testing::ElementsAre("calibrate:1.00", "select:0.00", "select:0.50"));
}

TEST(MonotonicProgressTest, NullNextDiscards) {
  MonotonicProgressSink sink(nullptr);
  sink.Report({"report", 0.5, ""});
  sink.Warn("w");
}

}  // namespace
}  // namespace quantd
