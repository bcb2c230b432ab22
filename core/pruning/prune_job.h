// The pruning job: PruneRequest in, PruneResult out (MCT 2.3's
// pytorch_pruning_experimental for ONNX; docs/pruning.md).
//
// Stages: import (TPC, model, samples) -> sections (pruning_section.h) ->
// importance (importance.h) -> mask (channel_groups.h, against the weights
// memory target) -> prune (apply_pruning.h) -> evaluate (output SQNR) ->
// [quantize: RunQuantizeJob on the pruned model]. quantctl's in-process
// mode and the server both call RunPruneJob.
#ifndef QUANTD_CORE_PRUNING_PRUNE_JOB_H_
#define QUANTD_CORE_PRUNING_PRUNE_JOB_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pipeline/job/preflight.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "quantd/v1/pruning.pb.h"

namespace quantd {

struct PruneContext {
  const TpcRegistry* registry = nullptr;  // required
  ThreadPool* pool = nullptr;             // null: single-threaded
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;
  JobLimits limits;
  // Called once the model is imported, before any heavy work: the server
  // estimates the job's memory from it (EstimatePruneMemoryBytes,
  // job_memory.h) and grows its admission; an error stops the job.
  std::function<absl::Status(const Model&)> on_import;
};

// Cheap checks without parsing the model: onnx_model, the target, samples.
absl::Status ValidatePruneRequest(const v1::PruneRequest& request,
                                  const JobLimits& limits);

// Errors: INVALID_ARGUMENT naming the field; FAILED_PRECONDITION for a model
// without prunable sections (with why each candidate was rejected) or a
// target below what one SIMD group per layer allows (with that minimum).
absl::StatusOr<v1::PruneResult> RunPruneJob(const v1::PruneRequest& request,
                                            const PruneContext& context);

}  // namespace quantd

#endif  // QUANTD_CORE_PRUNING_PRUNE_JOB_H_
