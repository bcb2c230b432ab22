// --fault_injection's spec: stall:STAGE@N beside the stage-start
// kinds, and the errors that name the bad item.
#include "server/fault_injection.h"

#include "gtest/gtest.h"

namespace quantd::server {
namespace {

TEST(FaultInjectionParse, StallAtAProgressReportRoundTrips) {
  auto faults = FaultInjection::Parse("stall:select@3,fail:export");
  ASSERT_TRUE(faults.ok()) << faults.status();
  EXPECT_FALSE(faults->empty());
  EXPECT_EQ(faults->ToString(), "fail:export,stall:select@3");
}

TEST(FaultInjectionParse, AtIsForStallOnlyWithAPositiveCount) {
  for (const char* bad : {"fail:select@3", "stall:select@0", "stall:select@x",
                          "stall:select@1@2"}) {
    SCOPED_TRACE(bad);
    auto faults = FaultInjection::Parse(bad);
    ASSERT_FALSE(faults.ok());
    EXPECT_NE(faults.status().message().find(bad), std::string::npos)
        << faults.status();
  }
}

TEST(FaultInjectionParse, OnlyStallAtNeedsAProgressWrapper) {
  CancellationToken token;
  NullProgressSink sink;
  auto at_start = FaultInjection::Parse("stall:select");
  ASSERT_TRUE(at_start.ok());
  EXPECT_EQ(at_start->WrapProgress(&sink, &token), nullptr);
  EXPECT_NE(at_start->HookFor(&token), nullptr);
  auto inside = FaultInjection::Parse("stall:select@2");
  ASSERT_TRUE(inside.ok());
  EXPECT_NE(inside->WrapProgress(&sink, &token), nullptr);
  EXPECT_EQ(inside->HookFor(&token), nullptr);
}

}  // namespace
}  // namespace quantd::server
