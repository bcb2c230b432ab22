// Error of the fake-quant model against float on the evaluation samples:
// SQNR per quantized tensor (the cumulative error at that point of the
// network), per graph output, top-1 agreement of classifier-like outputs
// ([N, C], C >= 2) and the mean cosine similarity of each output. Samples
// run in parallel; sums are merged in sample order (deterministic). Samples
// whose float values `kept` holds (the calibration pass's, when the
// evaluation samples are its first ones) skip the float run and free them
// as they go; the figures are the same.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_EVALUATION_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_EVALUATION_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/job/samples.h"
#include "core/report/report.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct EvaluationResult {
  std::map<std::string, double> tensor_sqnr_db;  // +inf when exact
  std::vector<OutputReport> outputs;
  std::optional<double> output_sqnr_db;  // over all outputs together
};

// SQNR in dB from sums of squares; +inf when noise is 0.
double SqnrDb(double signal, double noise);

absl::StatusOr<EvaluationResult> EvaluateFakeQuant(
    const Executor& float_model, const Executor& fake_quant_model,
    const ActivationFakeQuantizer& quantizer,
    const std::vector<SampleFeeds>& samples,
    const std::set<std::string>& tensors, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress,
    KeptFloatRuns* kept = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_EVALUATION_H_
