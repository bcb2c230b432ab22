// What the BN loss aligns: for each BatchNormalization node, its input tensor
// and the running mean / sqrt(running var) (MCT's OriginalBNStatsHolder), or
// the statistics the caller passed for a folded model.
#ifndef QUANTD_CORE_DATAGEN_BN_TARGETS_H_
#define QUANTD_CORE_DATAGEN_BN_TARGETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/datagen/options.h"
#include "core/graph/graph.h"

namespace quantd::datagen {

struct BnTarget {
  std::string tensor;  // aligned tensor (channel axis 1)
  std::string source;  // "node 'bn_3' (BatchNormalization)" or "statistics"
  std::vector<float> mean, std;
};

// FAILED_PRECONDITION naming what is missing when the model has no
// BatchNormalization with constant statistics and none were passed.
absl::StatusOr<std::vector<BnTarget>> FindBnTargets(
    const Graph& graph, const DataGenOptions& options);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_BN_TARGETS_H_
