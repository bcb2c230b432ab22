// The `hessian` stage: per-element Hessian scores of the kernels that the
// HMSE weights search weighs its error with (core/hessian/weights_hessian.h,
// MCT's HessianMode.WEIGHTS / PER_ELEMENT on the first 16 calibration
// samples), computed on the prepared float model before selection and kept in
// PtqOptions::hessian_scores. MCT computes them for the nodes whose kernel
// attribute is quantized (_collect_nodes_for_hmse); other weights (biases)
// fall back to MSE, as MCT does with a warning (SelectWeightParams).
#ifndef QUANTD_CORE_PIPELINE_PTQ_HESSIAN_SCORES_H_
#define QUANTD_CORE_PIPELINE_PTQ_HESSIAN_SCORES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/hessian/weights_hessian.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/stage_names.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/attribute_names.h"

namespace quantd {

// The slot attribute HMSE applies to (MCT: the node's kernel attribute).
inline constexpr const char* kHmseAttr = tpc::kKernelAttr;

// True when selection with `options` uses HMSE and has no scores yet.
bool NeedsHessianScores(const PtqOptions& options);

// The float kernels (kernel_attr slots with an initializer) of every node of
// the state, deduplicated, in graph order.
std::vector<std::string> HmseKernels(const JobState& state);

// The scores of HmseKernels(state) on `calibration` (the first 16 samples).
// An op without a backward pass on the way to the outputs is UNIMPLEMENTED
// naming the node; progress is reported under `stage`.
absl::StatusOr<std::shared_ptr<const hessian::HessianScores>>
ComputeHessianScores(const JobState& state,
                     const std::vector<SampleFeeds>& calibration,
                     ThreadPool* pool, const CancellationToken* cancel,
                     ProgressSink* progress,
                     const std::string& stage = stage::kHessian);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PTQ_HESSIAN_SCORES_H_
