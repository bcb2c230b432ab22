#include "core/pipeline/quality_target/target_gptq_trial.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/gptq/gptq_memory.h"
#include "core/pipeline/gptq/gptq_stage.h"
#include "core/pipeline/quality_target/target_measure.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::Status TryGptqForTarget(const QualityTargetInputs& inputs,
                              JobState* state, QualityTargetOutcome* outcome,
                              ThreadPool* pool, const CancellationToken* cancel,
                              ProgressSink* progress) {
  const JobSpec& spec = *inputs.spec;
  const GptqOptions& options = *spec.gptq;
  const QualityTargetOptions& target = *spec.target;
  QualityTargetReport& report = outcome->report;
  const auto start = std::chrono::steady_clock::now();
  const std::string action =
      absl::StrCat("gptq: ", options.n_epochs, " epoch(s)");
  const double before = report.reached.value_or(outcome->best_figure);
  JobState trial = *state;
  // GPTQ's blocks each fit their own output; how the whole model's figure
  // moves shows early (ppocr_det +2.06 dB after its first quarter,
  // ppocr_rec -2.95 dB: docs/quality_target.md, the checkpoint).
  std::optional<double> stopped_at;
  std::string stopped;
  const GptqAfterBlock checkpoint =
      [&](size_t done, size_t total,
          const JobState& partial) -> absl::StatusOr<bool> {
    const auto at =
        static_cast<size_t>(GptqCheckpointBlocks(static_cast<int64_t>(total)));
    if (done != at || done == total) return true;
    ASSIGN_OR_RETURN(
        QualityFigures f,
        outcome->meter->Measure(partial, spec.export_options, pool, cancel));
    const double figure = Figure(f, target.metric);
    if (figure >= before) {
      // The rest of the blocks, the widest ones maybe among them.
      if (inputs.reach_memory_stage) {
        RETURN_IF_ERROR(
            inputs.reach_memory_stage(JobMemoryStage::kTargetGptqRest));
      }
      return true;
    }
    stopped_at = figure;
    stopped = absl::StrCat(", stopped after ", done, "/", total,
                           " blocks below the starting figure");
    return false;
  };
  absl::Status trained =
      RunGptq(options, *inputs.float_model, *inputs.calibration,
              spec.export_options, &trial, pool, cancel, progress, checkpoint);
  // A model GPTQ cannot train (an op without a backward pass, no kernel
  // the outputs depend on) skips the trial, not the job.
  if (!trained.ok()) {
    if (!SkipsTheTrial(trained)) return trained;
    report.steps.push_back(
        {absl::StrCat("gptq skipped (", trained.message(), ")"), std::nullopt,
         false, SecondsSince(start)});
    return absl::OkStatus();
  }
  if (stopped_at.has_value()) {
    report.steps.push_back({absl::StrCat(action, stopped), stopped_at, false,
                            SecondsSince(start)});
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(
      QualityFigures f,
      outcome->meter->Measure(trial, spec.export_options, pool, cancel));
  const double figure = Figure(f, target.metric);
  const bool kept = figure > before + GainEpsilon(target);
  report.steps.push_back({action, figure, kept, SecondsSince(start)});
  if (!kept) return absl::OkStatus();
  *state = std::move(trial);
  report.changes.push_back({"", "gptq", "false", "true"});
  report.reached = figure;
  report.met = TargetMet(target, figure);
  if (figure > outcome->best_figure) {
    outcome->best_figure = figure;
    outcome->best_description =
        absl::StrCat(outcome->best_description, ", then GPTQ");
  }
  return absl::OkStatus();
}

}  // namespace quantd
