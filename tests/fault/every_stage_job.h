// The job the cancellation tests run (in-process and through quantd): the
// example CNN with mixed precision and GPTQ, so that it passes through every
// stage; and a ProgressSink that records its stages and progress ticks and
// can cancel a token at a chosen tick.
#ifndef QUANTD_TESTS_FAULT_EVERY_STAGE_JOB_H_
#define QUANTD_TESTS_FAULT_EVERY_STAGE_JOB_H_

#include <map>
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
#include "tests/testing/example_model.h"

namespace quantd::testing {

inline v1::QuantizeRequest EveryStageRequest() {
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

// Records stage starts and ticks (reports with a fraction above 0); cancels
// `token` at tick `cancel_at` of `stage` (0: at the stage's start).
class StageRecorder : public ProgressSink {
 public:
  StageRecorder(CancellationToken* token, std::string stage, int cancel_at)
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

// Runs `request` in-process on one thread (the ticks come in a fixed order)
// with `recorder` as its sink and stage hook.
inline absl::Status RunRecordedJob(const v1::QuantizeRequest& request,
                                   const TpcRegistry& registry,
                                   const CancellationToken* token,
                                   StageRecorder* recorder) {
  JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = nullptr;
  ctx.cancel = token;
  ctx.progress = recorder;
  ctx.on_stage_start = [recorder](const std::string& stage) {
    return recorder->OnStageStart(stage);
  };
  return RunQuantizeJob(request, ctx).status();
}

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_FAULT_EVERY_STAGE_JOB_H_
