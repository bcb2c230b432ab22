// Cancellation inside every stage (issue 15 item 5, docs/reliability.md). A
// job on the example CNN with mixed precision and GPTQ runs in-process on
// one thread; for each stage its token is cancelled at a seeded random
// progress tick inside the stage (or at its start, for stages that report
// no ticks), from the progress callback itself, so the point is exact. The
// job must return CANCELLED, at most one more tick of the stage may follow
// the cancel, and no later stage may start: the stage stops at its next
// check instead of running to its end.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/onnx_export.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/testing/example_model.h"

namespace quantd::testing {
namespace {

v1::QuantizeRequest EveryStageRequest() {
  v1::QuantizeRequest r;
  r.set_onnx_model(*ExportOnnx(MakeExampleCnn()));
  for (const SampleFeeds& sample : MakeExampleImages(8, 1)) {
    v1::Sample* s = r.add_calibration_samples();
    for (const auto& [name, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  r.mutable_tpc()->set_name("imx500@4.1");
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  r.mutable_mixed_precision()->set_num_of_images(4);
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_n_epochs(2);
  r.set_report_samples(-1);
  return r;
}

// Records stage starts and ticks; cancels `token` at tick `cancel_at` of
// `stage` (0: at the stage's start).
class Recorder : public ProgressSink {
 public:
  Recorder(CancellationToken* token, std::string stage, int cancel_at)
      : token_(token), stage_(std::move(stage)), cancel_at_(cancel_at) {}

  absl::Status OnStageStart(const std::string& stage) {
    stages_.push_back(stage);
    if (token_ != nullptr && stage == stage_ && cancel_at_ == 0) Cancel();
    return absl::OkStatus();
  }
  void Report(const Progress& p) override {
    if (p.fraction == 0) return;  // a stage's start, not a tick
    const int n = ++ticks_[p.stage];
    if (cancelled_) ++ticks_after_cancel_;
    if (token_ != nullptr && p.stage == stage_ && n == cancel_at_) Cancel();
  }

  const std::vector<std::string>& stages() const { return stages_; }
  const std::map<std::string, int>& ticks() const { return ticks_; }
  int ticks_after_cancel() const { return ticks_after_cancel_; }

 private:
  void Cancel() {
    cancelled_ = true;
    token_->Cancel();
  }
  CancellationToken* token_;
  std::string stage_;
  int cancel_at_;
  bool cancelled_ = false;
  int ticks_after_cancel_ = 0;
  std::vector<std::string> stages_;
  std::map<std::string, int> ticks_;
};

absl::Status RunJob(const v1::QuantizeRequest& request,
                    const TpcRegistry& registry, const CancellationToken* token,
                    Recorder* recorder) {
  JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = nullptr;  // one thread: the ticks come in a fixed order
  ctx.cancel = token;
  ctx.progress = recorder;
  ctx.on_stage_start = [recorder](const std::string& stage) {
    return recorder->OnStageStart(stage);
  };
  return RunQuantizeJob(request, ctx).status();
}

TEST(CancelPoints, EveryStageStopsAtItsNextCheckAfterACancel) {
  TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  const v1::QuantizeRequest request = EveryStageRequest();
  Recorder reference(nullptr, "", 0);
  ASSERT_TRUE(RunJob(request, registry, nullptr, &reference).ok());
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
    Recorder recorder(&token, stage, cancel_at);
    const absl::Status status = RunJob(request, registry, &token, &recorder);
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
  Recorder recorder(nullptr, "", 0);
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
