// Rewrites a model without the removed channels (MCT's build_pruned_graph):
// the entry's kernel and bias lose output channels, the intermediates'
// per-channel constants (BatchNormalization parameters, Mul/Add/... and
// PRelu constants) the same channels, the exit's kernel input channels.
#ifndef QUANTD_CORE_PRUNING_APPLY_PRUNING_H_
#define QUANTD_CORE_PRUNING_APPLY_PRUNING_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"
#include "core/pruning/pruning_section.h"

namespace quantd::pruning {

// `kept[s]`: the channels of section s to keep, ascending. The inferred
// shapes of the chain's tensors are dropped (their channel count changed).
absl::Status ApplyPruning(const std::vector<PruningSection>& sections,
                          const std::vector<std::vector<int64_t>>& kept,
                          Model* model);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_APPLY_PRUNING_H_
