// The abstract, graph-free mixed-precision bit-allocation problem (MCT §1.4).
//
// Configurable node i has candidates j (weights bits, activation bits) with a
// sensitivity m_ij >= 0. Each resource model t (weights, activation, total,
// BOPs) has one or more memory elements k (one per memory cut for activation
// and total) whose figure is linear in the chosen candidates, as in MCT's
// linearization around the minimum-bit configuration:
//   RU_tk(config) = base[k] + sum_i delta[k][i][config_i],
// with delta[k][i][min_candidate_i] == 0. A model with a budget is a
// restricted target; unrestricted models are kept for reporting and for the
// refinement's ordering.
#ifndef QUANTD_CORE_MIXED_PRECISION_BIT_ALLOCATION_PROBLEM_H_
#define QUANTD_CORE_MIXED_PRECISION_BIT_ALLOCATION_PROBLEM_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quantd::mixed_precision {

enum class ResourceTarget { kWeights, kActivation, kTotal, kBops };

// "weights", "activation", "total", "bops".
absl::string_view ResourceTargetName(ResourceTarget target);

struct BitCandidate {
  int weights_bits = 8;
  int activation_bits = 8;
};

struct ConfigurableNode {
  std::string name;
  std::vector<BitCandidate> candidates;
  // sensitivity[j] = m_ij, one per candidate.
  std::vector<double> sensitivity;
  // Index of the minimum-bit candidate (the linearization point).
  int min_candidate = 0;
  // Manual override (MCT's BitWidthConfig): the search must pick this one.
  std::optional<int> fixed_candidate;
};

struct ResourceModel {
  ResourceTarget target = ResourceTarget::kWeights;
  // Budget in bytes (memory) or bit-operations (BOPs); nullopt = unrestricted.
  std::optional<double> budget;
  // base[k] = RU_k(min-config), one per memory element k.
  std::vector<double> base;
  // delta[k][i][j] = RU_k(min-config with node i at j) - RU_k(min-config).
  std::vector<std::vector<std::vector<double>>> delta;
};

struct BitAllocationProblem {
  std::vector<ConfigurableNode> nodes;
  // At most one model per ResourceTarget.
  std::vector<ResourceModel> resources;
};

// Checks shapes, finiteness, sensitivities >= 0, zero deltas at the minimum
// candidate, override indices and duplicate targets; the message names the
// field at fault. Every other function here assumes a validated problem.
absl::Status ValidateProblem(const BitAllocationProblem& problem);

// Figure of one resource model for a full configuration (one candidate index
// per node): the maximum over memory elements.
double ResourceValue(const ResourceModel& model, absl::Span<const int> config);

// The minimum-bit configuration with overrides applied.
std::vector<int> MinimumConfiguration(const BitAllocationProblem& problem);

// Tolerance used when comparing a figure against a budget: budgets are byte
// or bit-op counts, so a relative 1e-9 absorbs floating summation error only.
bool WithinBudget(double value, double budget);

// True if every restricted resource holds for `config`.
bool SatisfiesBudgets(const BitAllocationProblem& problem,
                      absl::Span<const int> config);

// Sum of m_ij over the chosen candidates.
double Objective(const BitAllocationProblem& problem,
                 absl::Span<const int> config);

// The model for `target`, or nullptr.
const ResourceModel* FindResource(const BitAllocationProblem& problem,
                                  ResourceTarget target);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_BIT_ALLOCATION_PROBLEM_H_
