// ProgressPacer: at most one progress event per interval, the latest held
// one sent by Flush (the flusher's tick) or returned by Close. A fake clock
// drives the interval; no flusher (nullptr), so nothing happens on its own.
#include "server/progress_pacer.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

constexpr absl::Duration kInterval = absl::Milliseconds(50);

struct Sent {
  std::string event;
  bool droppable;
};

class ProgressPacerTest : public ::testing::Test {
 protected:
  ProgressPacer<std::string> pacer_{
      kInterval, nullptr, nullptr,
      [this](std::string e, bool droppable) {
        sent_.push_back({std::move(e), droppable});
      },
      [this] { return now_; }};
  absl::Time now_ = absl::UnixEpoch();
  std::vector<Sent> sent_;
};

TEST_F(ProgressPacerTest, AReportWithinTheIntervalAfterAcceptedIsHeld) {
  pacer_.Sent();  // accepted at t=0
  now_ += absl::Milliseconds(10);
  pacer_.Report("import 0", "import");
  EXPECT_TRUE(sent_.empty());
}

TEST_F(ProgressPacerTest, AReportAfterTheIntervalIsSentAtOnce) {
  pacer_.Sent();
  now_ += kInterval;
  pacer_.Report("import 0", "import");
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].event, "import 0");
}

TEST_F(ProgressPacerTest, FlushSendsOnlyTheLatestHeldReport) {
  pacer_.Sent();
  pacer_.Report("import 0", "import");
  pacer_.Report("prepare 0", "prepare");
  pacer_.Report("calibrate 0.5", "calibrate");
  pacer_.Flush();
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].event, "calibrate 0.5");
  pacer_.Flush();  // nothing held any more
  EXPECT_EQ(sent_.size(), 1u);
}

TEST_F(ProgressPacerTest, TheIntervalRestartsAtEachSend) {
  pacer_.Sent();
  now_ += kInterval;
  pacer_.Report("a", "import");  // sent at t=50
  now_ += absl::Milliseconds(49);
  pacer_.Report("b", "import");  // t=99: held
  EXPECT_EQ(sent_.size(), 1u);
  now_ += absl::Milliseconds(1);
  pacer_.Report("c", "import");  // t=100: sent, replacing the held one
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[1].event, "c");
  pacer_.Flush();
  EXPECT_EQ(sent_.size(), 2u);
}

TEST_F(ProgressPacerTest, AStagesFirstEventIsKeptLaterOnesDroppable) {
  pacer_.Report("import 0", "import");
  now_ += kInterval;
  pacer_.Report("import 0.5", "import");
  now_ += kInterval;
  pacer_.Report("prepare 0", "prepare");
  ASSERT_EQ(sent_.size(), 3u);
  EXPECT_FALSE(sent_[0].droppable);
  EXPECT_TRUE(sent_[1].droppable);
  EXPECT_FALSE(sent_[2].droppable);
}

TEST_F(ProgressPacerTest, CloseReturnsTheHeldReportAndStopsSending) {
  pacer_.Sent();
  pacer_.Report("report 0", "report");
  const auto held = pacer_.Close();
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(*held, "report 0");
  now_ += kInterval;
  pacer_.Report("late", "report");
  pacer_.Flush();
  EXPECT_TRUE(sent_.empty());
}

TEST_F(ProgressPacerTest, TheLastStagesFirstReportIsSentAtOnce) {
  pacer_.SendAtOnce("report");
  pacer_.Sent();  // accepted at t=0
  now_ += absl::Milliseconds(10);
  pacer_.Report("calibrate 0", "calibrate");  // held
  pacer_.Report("report 0", "report");        // sent: replaces the held one
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].event, "report 0");
  EXPECT_FALSE(sent_[0].droppable);
  pacer_.Report("report 0.5", "report");  // a later report of it: held
  EXPECT_EQ(sent_.size(), 1u);
  pacer_.Flush();
  EXPECT_EQ(sent_.size(), 2u);
}

TEST_F(ProgressPacerTest, CloseCanDropAHeldReportOfTheStageLastSent) {
  pacer_.Sent();
  now_ += kInterval;
  pacer_.Report("report 0", "report");  // sent
  pacer_.Report("report 1", "report");  // held
  EXPECT_FALSE(pacer_.Close(/*drop_known_stage=*/true).has_value());
  EXPECT_EQ(sent_.size(), 1u);
}

TEST_F(ProgressPacerTest, CloseKeepsAHeldReportOfANewStage) {
  pacer_.Sent();
  now_ += kInterval;
  pacer_.Report("report 0", "report");  // sent
  pacer_.Report("export 0", "export");  // held: the client does not know it
  const auto held = pacer_.Close(/*drop_known_stage=*/true);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(*held, "export 0");
}

}  // namespace
}  // namespace quantd::server
