#include "server/event_coalescer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records writes; the test completes them by calling OnWriteDone, standing in
// for a slow or gone client.
class FakeSink : public EventCoalescer<std::string>::Sink {
 public:
  void StartWrite(const std::string* event) override {
    EXPECT_FALSE(in_flight) << "two writes in flight";
    EXPECT_FALSE(finished) << "write after Finish";
    in_flight = true;
    written.push_back(*event);
  }
  void Finish(const absl::Status& status) override {
    EXPECT_FALSE(in_flight) << "Finish with a write in flight";
    EXPECT_FALSE(finished) << "Finish twice";
    finished = true;
    final_status = status;
  }
  void WriteAndFinish(const std::string* event,
                      const absl::Status& status) override {
    StartWrite(event);
    in_flight = false;  // no OnWriteDone follows
    Finish(status);
    finished_with_write = true;
  }
  bool in_flight = false;
  bool finished_with_write = false;
  bool finished = false;
  absl::Status final_status;
  std::vector<std::string> written;
};

class EventCoalescerTest : public ::testing::Test {
 protected:
  void Complete(bool ok = true) {
    sink_.in_flight = false;
    coalescer_.OnWriteDone(ok);
  }
  FakeSink sink_;
  EventCoalescer<std::string> coalescer_{&sink_};
};

TEST_F(EventCoalescerTest, WritesAtOnceWhenIdle) {
  coalescer_.Post("accepted", false);
  EXPECT_THAT(sink_.written, ElementsAre("accepted"));
}

TEST_F(EventCoalescerTest, LatestDroppableWinsWhileWriteInFlight) {
  coalescer_.Post("accepted", false);
  coalescer_.Post("p10", true);
  coalescer_.Post("p20", true);
  coalescer_.Post("p30", true);
  Complete();
  Complete();
  EXPECT_THAT(sink_.written, ElementsAre("accepted", "p30"));
  EXPECT_EQ(coalescer_.dropped(), 2);
}

TEST_F(EventCoalescerTest, KeptEventsAreNeverReplaced) {
  coalescer_.Post("accepted", false);
  coalescer_.Post("calibrate 0%", false);  // first of a stage: kept
  coalescer_.Post("calibrate 50%", true);
  coalescer_.Post("select 0%", false);
  coalescer_.Post("select 10%", true);
  coalescer_.Post("select 90%", true);
  for (int i = 0; i < 4; ++i) Complete();
  EXPECT_THAT(sink_.written,
              ElementsAre("accepted", "calibrate 0%", "calibrate 50%",
                          "select 0%", "select 90%"));
}

TEST_F(EventCoalescerTest, DroppableAfterKeptIsQueuedNotMerged) {
  coalescer_.Post("a", false);
  coalescer_.Post("warning", false);
  coalescer_.Post("p1", true);
  Complete();
  Complete();
  EXPECT_THAT(sink_.written, ElementsAre("a", "warning", "p1"));
}

// The last queued event goes out with the finish: no OnWriteDone for it.
TEST_F(EventCoalescerTest, CloseWaitsForQueuedEventsThenFinishesWithTheLast) {
  coalescer_.Post("accepted", false);
  coalescer_.Post("progress", false);
  coalescer_.Post("result", false);
  coalescer_.Close(absl::OkStatus());
  EXPECT_FALSE(sink_.finished);
  Complete();
  EXPECT_FALSE(sink_.finished);
  Complete();
  EXPECT_TRUE(sink_.finished_with_write);
  EXPECT_THAT(sink_.written, ElementsAre("accepted", "progress", "result"));
}

TEST_F(EventCoalescerTest, CloseAfterTheLastWriteCompletedFinishesAlone) {
  coalescer_.Post("result", false);
  coalescer_.Close(absl::OkStatus());
  Complete();
  EXPECT_TRUE(sink_.finished);
  EXPECT_FALSE(sink_.finished_with_write);
  EXPECT_THAT(sink_.written, ElementsAre("result"));
}

TEST_F(EventCoalescerTest, PostLastAndCloseWhenIdleIsOneStep) {
  coalescer_.PostLastAndClose("result", absl::OkStatus());
  EXPECT_TRUE(sink_.finished_with_write);
  EXPECT_THAT(sink_.written, ElementsAre("result"));
}

TEST_F(EventCoalescerTest, PostLastAndCloseWaitsForTheWriteInFlight) {
  coalescer_.Post("accepted", false);
  coalescer_.PostLastAndClose("result", absl::OkStatus());
  EXPECT_FALSE(sink_.finished);
  Complete();
  EXPECT_TRUE(sink_.finished_with_write);
  EXPECT_THAT(sink_.written, ElementsAre("accepted", "result"));
}

TEST_F(EventCoalescerTest, PostLastAndCloseOnABrokenStreamOnlyFinishes) {
  coalescer_.Post("accepted", false);
  Complete(/*ok=*/false);
  coalescer_.PostLastAndClose("result", absl::OkStatus());
  EXPECT_TRUE(sink_.finished);
  EXPECT_FALSE(sink_.finished_with_write);
  EXPECT_THAT(sink_.written, ElementsAre("accepted"));
}

TEST_F(EventCoalescerTest, CloseWhenIdleFinishesImmediately) {
  coalescer_.Close(absl::InvalidArgumentError("bad"));
  EXPECT_TRUE(sink_.finished);
  EXPECT_EQ(sink_.final_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sink_.written, IsEmpty());
}

TEST_F(EventCoalescerTest, PostsAfterCloseAreIgnored) {
  coalescer_.Close(absl::OkStatus());
  coalescer_.Post("late", false);
  EXPECT_THAT(sink_.written, IsEmpty());
}

TEST_F(EventCoalescerTest, FailedWriteDiscardsQueueAndFinishesOnClose) {
  coalescer_.Post("accepted", false);
  coalescer_.Post("p1", false);
  coalescer_.Post("p2", false);
  Complete(/*ok=*/false);  // client went away
  EXPECT_THAT(sink_.written, ElementsAre("accepted"));
  coalescer_.Post("after", false);  // the job has not noticed yet
  EXPECT_THAT(sink_.written, ElementsAre("accepted"));
  EXPECT_FALSE(sink_.finished);
  coalescer_.Close(absl::CancelledError("gone"));
  EXPECT_TRUE(sink_.finished);
}

}  // namespace
}  // namespace quantd::server
