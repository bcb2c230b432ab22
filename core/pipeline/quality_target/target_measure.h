// The figure a quality target is checked against, measured the way the
// report measures it (evaluation.cc): the fake-quantized model (the state's
// QdqPlan, weights and activations) against float on the evaluation
// samples. SQNR is over every graph output together; cosine is the worst
// output's mean cosine similarity. The float outputs are computed once and
// kept; samples run in parallel and sums merge in sample order, so the
// figure does not depend on the thread count.
#ifndef QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_MEASURE_H_
#define QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_MEASURE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/graph/tensor.h"
#include "core/pipeline/export/export_options.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/quality_target/quality_target_options.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct QualityFigures {
  double sqnr_db = 0;  // +inf when exact
  double cosine = 1;   // min over outputs of the mean over samples
};

class QualityMeter {
 public:
  // Runs the float model once per sample.
  static absl::StatusOr<QualityMeter> Create(
      const Executor& float_model, const std::vector<SampleFeeds>& samples,
      ThreadPool* pool, const CancellationToken* cancel);

  // The figures of the state's decisions (after the corrections).
  absl::StatusOr<QualityFigures> Measure(const JobState& state,
                                         const ExportOptions& export_options,
                                         ThreadPool* pool,
                                         const CancellationToken* cancel) const;

 private:
  const std::vector<SampleFeeds>* samples_ = nullptr;
  std::vector<std::string> output_names_;  // graph output order
  std::vector<std::map<std::string, Tensor>> float_outputs_;
};

// The figure of `metric` (SQNR when unspecified).
double Figure(const QualityFigures& f, QualityTargetOptions::Metric metric);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_MEASURE_H_
