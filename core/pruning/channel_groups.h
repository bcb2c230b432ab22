// SIMD channel groups and the greedy choice of the groups to keep (MCT's
// ChannelGrouping, PerSIMDGroupMask and GreedyMaskCalculator).
#ifndef QUANTD_CORE_PRUNING_CHANNEL_GROUPS_H_
#define QUANTD_CORE_PRUNING_CHANNEL_GROUPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/tensor.h"
#include "core/pruning/weights_memory.h"

namespace quantd::pruning {

struct ChannelGroups {
  // Channel indices, most important group first; every group has `simd`
  // channels except the last one (the remainder, least important).
  std::vector<std::vector<int64_t>> groups;
  std::vector<double> scores;  // one per group (importance.h's formula)
};

// Sorts the channels of `kernel` (output channels along `axis`) by
// traces[c] * ||W_c||^2 / |W_c|, descending (ties: lower index first), and
// cuts them into groups of `simd`.
ChannelGroups GroupChannels(const std::vector<double>& traces,
                            const Tensor& kernel, int axis, int simd);

// How many groups of each section to keep: one each to start with (MCT's
// mandatory group), then the best-scoring next group of any section, while
// the memory is under `target_bytes`; the last addition is undone if it went
// over. FAILED_PRECONDITION when one group per section is already over the
// target (the message gives the minimum).
absl::StatusOr<std::vector<int>> GreedyKeptGroups(
    const std::vector<ChannelGroups>& groups, const PrunedWeightsMemory& memory,
    int64_t target_bytes);

// Channels kept in each section with `kept_groups` groups kept.
std::vector<int64_t> KeptChannels(const std::vector<ChannelGroups>& groups,
                                  const std::vector<int>& kept_groups);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_CHANNEL_GROUPS_H_
