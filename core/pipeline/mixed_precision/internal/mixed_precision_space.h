// The pieces of the mixed-precision stage (mixed_precision_stage.cc), split
// the way MCT structures its search: the candidates of every node and their
// parameters (mixed_precision_candidates.cc, MCT's configuration filtering),
// the resource layout the candidates are priced on
// (mixed_precision_layout.cc), the sensitivity evaluation and the solver call
// (mixed_precision_search.cc, MCT's search facade and manager) and the setter
// that writes the chosen candidates back into the plan
// (mixed_precision_apply.cc, MCT's set_layer_to_bitwidth). Only these files
// include this header.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_MIXED_PRECISION_SPACE_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_MIXED_PRECISION_SPACE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mixed_precision/bit_allocation_problem.h"
#include "core/pipeline/job/job_state.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/mixed_precision_resources.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/prep/op_config_bits.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd::mp_internal {

// Which resource kinds the request restricts, as the candidate filter needs
// them.
struct SearchScope {
  bool search = false;  // some target is set
  // MCT's candidate filter: with only weights (only activation) restricted,
  // the other dimension keeps its base bits.
  bool weights_only = false;
  bool activation_only = false;
};

// One node's search space.
struct NodeSpace {
  int node = 0;
  bool weights_configurable = false;     // kernel bits vary
  bool activation_configurable = false;  // output bits vary
  std::vector<int> configs;  // indices into qco.quantization_configurations
  std::vector<mixed_precision::BitCandidate> bits;
  // Selected parameters per candidate.
  std::vector<std::vector<WeightParams>> weight_results;
  std::vector<std::vector<WeightSlot>> slots;
  std::vector<std::optional<ActivationParams>> activation_results;
  std::vector<double> sensitivity;
  int chosen = 0;  // index into configs
};

// The resource layout of the plan and, per layout entry, which node's
// candidate decides its bits.
struct PlanLayout {
  ResourceLayout layout;
  // Per layout weight: node and slot index in that node's plan.
  std::vector<std::pair<int, int>> weight_slot;
  // Per layout activation: deciding node (-1 = graph input, fixed).
  std::vector<int> activation_owner;
};

// --- mixed_precision_layout.cc

// The config a weight slot gets under candidate `c` (WeightConfigForInput's
// rule: the slot's attribute key, else a key containing "pos_attr" for
// positional inputs, else the default attribute config).
const v1::AttributeQuantizationConfig& SlotConfig(
    const v1::OpQuantizationConfig& c, const WeightSlot& slot);

bool SlotQuantized(const v1::AttributeQuantizationConfig& c);

PlanLayout BuildPlanLayout(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes);

// Bits of every layout entry under the plan's current configs, with
// `override_bits` > 0 replacing every width (the 8-bit baseline).
ResourceBits CurrentBits(const PlanLayout& pl, const JobState& state,
                         bool simd_padding, int override_bits);

// Sets node `space`'s layout entries to candidate `k`.
void SetCandidateBits(const PlanLayout& pl, const JobState& state,
                      const NodeSpace& space, int k, bool simd_padding,
                      ResourceBits* bits);

// The constrained elements of `r` for target kind `t` (one per cut for
// activation and total memory).
std::vector<double> Elements(const ResourceBreakdown& r,
                             mixed_precision::ResourceTarget t);

// --- mixed_precision_candidates.cc

// The candidate list of every node that has something to decide or to
// change (TPC candidates filtered by `scope`, the consumers' supported input
// bits and the overrides); warns about overrides that match no node.
absl::StatusOr<std::vector<NodeSpace>> BuildNodeSpaces(
    const MixedPrecisionOptions& options, const SearchScope& scope,
    JobState* state);

// Selects the weight and activation parameters of every candidate (the
// costly searches, in parallel on `pool`). Without a search, only the first
// fitting candidate of each node is kept.
absl::Status SelectCandidateParams(bool search, JobState* state,
                                   ThreadPool* pool,
                                   const CancellationToken* cancel,
                                   std::vector<NodeSpace>* spaces);

// --- mixed_precision_search.cc

// With a search, measures the sensitivities of the nodes with more than one
// candidate (or takes them from `reuse` when it has every one) and sets
// each one's `chosen` candidate from the solver; sets
// outcome->configurable_nodes and proven_optimal.
absl::Status SearchBitAllocation(
    const MixedPrecisionOptions& options, bool search, const PlanLayout& pl,
    bool simd_padding, const std::vector<SampleFeeds>& samples, JobState* state,
    ThreadPool* pool, const CancellationToken* cancel, ProgressSink* progress,
    const MixedPrecisionSensitivity* reuse, std::vector<NodeSpace>* spaces,
    MixedPrecisionOutcome* outcome);

// --- mixed_precision_apply.cc

// Writes every node's chosen candidate (config, parameters) into its plan,
// records the sensitivities in `outcome` and re-derives the preserved nodes.
void ApplyChosenCandidates(const std::vector<NodeSpace>& spaces,
                           JobState* state, MixedPrecisionOutcome* outcome);

}  // namespace quantd::mp_internal

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_INTERNAL_MIXED_PRECISION_SPACE_H_
