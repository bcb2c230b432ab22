// Parameter selection (MCT's calculate_quantization_params) for the chosen
// configuration of every node: activations per tensor from the merged
// histogram (z-score filter, signedness, then the method's search; bounded
// outputs take the no-clipping min/max variant), weights per channel or per
// tensor from the float initializer, then quantized to integers.
#ifndef QUANTD_CORE_PIPELINE_PTQ_PARAM_SELECTION_H_
#define QUANTD_CORE_PIPELINE_PTQ_PARAM_SELECTION_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/graph/tensor.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

// Activation parameters for one tensor. `stats` may be null only when the
// output is bounded (known_min and known_max set).
absl::StatusOr<ActivationParams> SelectActivationParams(
    const std::string& tensor, const v1::OpQuantizationConfig& config,
    const TensorStats* stats, std::optional<double> known_min,
    std::optional<double> known_max, std::optional<bool> forced_signed,
    const PtqOptions& options);

// Weight parameters and integer values for one constant input. A cancelled
// `cancel` stops the threshold search within microseconds and returns its
// status.
absl::StatusOr<WeightParams> SelectWeightParams(
    const std::string& tensor_name, const Tensor& weight,
    const WeightSlot& slot, const PtqOptions& options, ThreadPool* pool,
    const CancellationToken* cancel = nullptr);

// The fake-quant float value of a selected weight (what the QDQ model and
// fake-quant execution see): int * scale (or LUT value * scale) in float32,
// shaped like int_values.
absl::StatusOr<Tensor> DequantizedWeight(const WeightParams& w);

// Whether weights selected with `a` are the ones `b` selects: the options
// the weight search reads agree (error method, p, HMSE's scores).
bool SameWeightSelection(const PtqOptions& a, const PtqOptions& b);

// Both for node `node` of the state alone, on the statistics of its
// outputs and its initializers as they are now (a correction that moved
// them selects the node again), with no cache.
absl::Status SelectNodeParams(int node, JobState* state,
                              const CancellationToken* cancel = nullptr);

// Runs both over every node of the state. With a `cache` selected on the
// same graph and plans: when SameWeightSelection holds for the state's
// options, a node whose cached results match its weight slots takes them
// (the same function of the same inputs) instead of searching again; the
// cache then holds this selection's weights.
absl::Status SelectAllParams(JobState* state, ThreadPool* pool,
                             const CancellationToken* cancel,
                             ProgressSink* progress,
                             WeightSelectionCache* cache = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PTQ_PARAM_SELECTION_H_
