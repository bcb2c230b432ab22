#include "core/mixed_precision/refinement.h"

#include <array>
#include <optional>

namespace quantd::mixed_precision {
namespace {

bool IsRestricted(const BitAllocationProblem& problem, ResourceTarget target) {
  const ResourceModel* model = FindResource(problem, target);
  return model != nullptr && model->budget.has_value();
}

bool IsValidUpgrade(const BitCandidate& current, const BitCandidate& next,
                    bool weights_only, bool activation_only) {
  if (weights_only) {
    return next.activation_bits == current.activation_bits &&
           next.weights_bits > current.weights_bits;
  }
  if (activation_only) {
    return next.weights_bits == current.weights_bits &&
           next.activation_bits > current.activation_bits;
  }
  return next.weights_bits >= current.weights_bits &&
         next.activation_bits >= current.activation_bits &&
         !(next.weights_bits == current.weights_bits &&
           next.activation_bits == current.activation_bits);
}

// (total, weights, activation), missing models count as 0.
using SortKey = std::array<double, 3>;

SortKey KeyOf(const BitAllocationProblem& problem,
              const std::vector<int>& config) {
  SortKey key = {0.0, 0.0, 0.0};
  const ResourceTarget order[3] = {ResourceTarget::kTotal,
                                   ResourceTarget::kWeights,
                                   ResourceTarget::kActivation};
  for (int d = 0; d < 3; ++d) {
    if (const ResourceModel* model = FindResource(problem, order[d])) {
      key[d] = ResourceValue(*model, config);
    }
  }
  return key;
}

}  // namespace

std::vector<int> RefineBitAllocation(const BitAllocationProblem& problem,
                                     std::vector<int> solution) {
  if (IsRestricted(problem, ResourceTarget::kBops)) return solution;
  const bool weights = IsRestricted(problem, ResourceTarget::kWeights);
  const bool activation = IsRestricted(problem, ResourceTarget::kActivation);
  const bool weights_only = weights && !activation;
  const bool activation_only = activation && !weights;

  // Each step strictly raises some node's bits, so the loop terminates.
  while (true) {
    std::optional<SortKey> best_key;
    int best_node = -1, best_candidate = -1;
    for (size_t i = 0; i < problem.nodes.size(); ++i) {
      const ConfigurableNode& node = problem.nodes[i];
      if (node.fixed_candidate.has_value()) continue;
      const BitCandidate current = node.candidates[solution[i]];
      const int original = solution[i];
      for (size_t j = 0; j < node.candidates.size(); ++j) {
        if (!IsValidUpgrade(current, node.candidates[j], weights_only,
                            activation_only)) {
          continue;
        }
        solution[i] = static_cast<int>(j);
        if (SatisfiesBudgets(problem, solution)) {
          const SortKey key = KeyOf(problem, solution);
          // Strict '<' keeps the first node / candidate on ties, matching
          // Python's min() and sorted() stability.
          if (!best_key.has_value() || key < *best_key) {
            best_key = key;
            best_node = static_cast<int>(i);
            best_candidate = static_cast<int>(j);
          }
        }
        solution[i] = original;
      }
    }
    if (best_node < 0) return solution;
    solution[best_node] = best_candidate;
  }
}

}  // namespace quantd::mixed_precision
