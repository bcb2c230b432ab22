// The pruned model's output against the unpruned one: SQNR over every float
// output of every sample (sum of squares of the reference over sum of
// squares of the difference).
#ifndef QUANTD_CORE_PRUNING_OUTPUT_SQNR_H_
#define QUANTD_CORE_PRUNING_OUTPUT_SQNR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"

namespace quantd::pruning {

// +inf when the outputs are identical.
absl::StatusOr<double> OutputSqnrDb(const Model& reference, const Model& pruned,
                                    const std::vector<SampleFeeds>& samples,
                                    ThreadPool* pool,
                                    const CancellationToken* cancel);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_OUTPUT_SQNR_H_
