// Cancellation inside every stage (docs/reliability.md). A
// job on the example CNN with mixed precision and GPTQ runs in-process on
// one thread; for each stage its token is cancelled at a seeded random
// progress tick inside the stage (or at its start, for stages that report
// no ticks), from the progress callback itself, so the point is exact. The
// job must return CANCELLED, at most one more tick of the stage may follow
// the cancel, and no later stage may start: the stage stops at its next
// check instead of running to its end.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/runtime/cancellation.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/fault/every_stage_job.h"

namespace quantd::testing {
namespace {

TEST(CancelPoints, EveryStageStopsAtItsNextCheckAfterACancel) {
  TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  const v1::QuantizeRequest request = EveryStageRequest();
  StageRecorder reference(nullptr, "", 0);
  ASSERT_TRUE(RunRecordedJob(request, registry, nullptr, &reference).ok());
  const std::vector<std::string> stages = reference.stages();
  for (const char* expected : {"calibrate", "select", "mixed_precision",
                               "correct", "gptq", "export", "report"}) {
    EXPECT_NE(std::find(stages.begin(), stages.end(), expected), stages.end())
        << expected;
  }

  std::mt19937 rng(15);  // seeded: the same points on every run
  for (size_t s = 0; s < stages.size(); ++s) {
    const std::string& stage = stages[s];
    auto it = reference.ticks().find(stage);
    const int ticks = it == reference.ticks().end() ? 0 : it->second;
    // A tick strictly inside the stage (neither its last step nor the
    // stage's "done"), else its start.
    const int cancel_at =
        ticks >= 3 ? std::uniform_int_distribution<int>(1, ticks - 2)(rng) : 0;
    SCOPED_TRACE(stage + " cancelled at tick " + std::to_string(cancel_at) +
                 " of " + std::to_string(ticks));
    CancellationToken token;
    StageRecorder recorder(&token, stage, cancel_at);
    const absl::Status status =
        RunRecordedJob(request, registry, &token, &recorder);
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_LE(recorder.ticks_after_cancel(), 1);
    ASSERT_FALSE(recorder.stages().empty());
    EXPECT_EQ(recorder.stages().back(), stage) << "a later stage started";
    if (ticks >= 3) {
      EXPECT_LT(recorder.ticks().at(stage), ticks);
    }
  }
}

TEST(CancelPoints, DeadlineInsideAStageReturnsDeadlineExceeded) {
  TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  const v1::QuantizeRequest request = EveryStageRequest();
  // A deadline already past when select starts: the token reports it at
  // the stage's first check.
  CancellationToken token;
  StageRecorder recorder(nullptr, "", 0);
  JobContext ctx;
  ctx.registry = &registry;
  ctx.cancel = &token;
  ctx.progress = &recorder;
  ctx.on_stage_start = [&](const std::string& stage) {
    if (stage == "select") token.SetDeadline(absl::InfinitePast());
    return recorder.OnStageStart(stage);
  };
  const absl::Status status = RunQuantizeJob(request, ctx).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(recorder.stages().back(), "select");
}

}  // namespace
}  // namespace quantd::testing
