// A job stream stalled by --fault_injection=stall:<stage>@1: the stall's
// warning arrives, then heartbeats while the job waits (every job RPC's
// reactor sends them).
#ifndef QUANTD_TESTS_INTEGRATION_STALL_HEARTBEATS_H_
#define QUANTD_TESTS_INTEGRATION_STALL_HEARTBEATS_H_

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace quantd::testing {

// Reads `reader` (a grpc::ClientReader of a job's events) until a heartbeat
// follows the injected stall's warning; no result may come first.
template <typename Event, typename Reader>
void ExpectHeartbeatsAfterTheStall(Reader* reader) {
  Event e;
  bool stalled = false;
  bool heartbeat_after_stall = false;
  while (!heartbeat_after_stall && reader->Read(&e)) {
    EXPECT_FALSE(e.has_result());
    if (e.has_warning() &&
        absl::StrContains(e.warning().message(), "fault injected")) {
      stalled = true;
    }
    if (e.has_heartbeat() && stalled) {
      heartbeat_after_stall = true;
      EXPECT_GE(e.heartbeat().elapsed_seconds(), 0);
    }
  }
  EXPECT_TRUE(stalled);
  EXPECT_TRUE(heartbeat_after_stall);
}

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_INTEGRATION_STALL_HEARTBEATS_H_
