#include "core/mixed_precision/refinement.h"

#include <algorithm>
#include <array>
#include <limits>
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

// Per-element figures of every resource model for the current solution, so a
// single-node move is evaluated in O(elements) instead of O(elements * nodes).
class ResourceState {
 public:
  ResourceState(const BitAllocationProblem& problem,
                const std::vector<int>& solution)
      : problem_(problem) {
    for (const ResourceModel& model : problem.resources) {
      std::vector<double> values(model.base.size());
      for (size_t k = 0; k < model.base.size(); ++k) {
        values[k] = model.base[k];
        for (size_t i = 0; i < solution.size(); ++i) {
          values[k] += model.delta[k][i][solution[i]];
        }
      }
      values_.push_back(std::move(values));
    }
  }

  // Figure of resources[t] if node i moves from candidate `from` to `to`.
  double ValueAfterMove(size_t t, size_t i, int from, int to) const {
    const ResourceModel& model = problem_.resources[t];
    double best = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < model.base.size(); ++k) {
      best = std::max(best, values_[t][k] - model.delta[k][i][from] +
                                model.delta[k][i][to]);
    }
    return best;
  }

  void ApplyMove(size_t i, int from, int to) {
    for (size_t t = 0; t < values_.size(); ++t) {
      const ResourceModel& model = problem_.resources[t];
      for (size_t k = 0; k < model.base.size(); ++k) {
        values_[t][k] += model.delta[k][i][to] - model.delta[k][i][from];
      }
    }
  }

 private:
  const BitAllocationProblem& problem_;
  std::vector<std::vector<double>> values_;
};

// (total, weights, activation), missing models count as 0.
using SortKey = std::array<double, 3>;

int KeySlot(ResourceTarget target) {
  switch (target) {
    case ResourceTarget::kTotal:
      return 0;
    case ResourceTarget::kWeights:
      return 1;
    case ResourceTarget::kActivation:
      return 2;
    case ResourceTarget::kBops:
      return -1;
  }
  return -1;
}

// Key of the move, or nullopt if it breaks a budget.
std::optional<SortKey> EvaluateMove(const BitAllocationProblem& problem,
                                    const ResourceState& state, size_t i,
                                    int from, int to) {
  SortKey key = {0.0, 0.0, 0.0};
  for (size_t t = 0; t < problem.resources.size(); ++t) {
    const ResourceModel& model = problem.resources[t];
    const double value = state.ValueAfterMove(t, i, from, to);
    if (model.budget.has_value() && !WithinBudget(value, *model.budget)) {
      return std::nullopt;
    }
    if (const int slot = KeySlot(model.target); slot >= 0) key[slot] = value;
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

  ResourceState state(problem, solution);
  // Each step strictly raises some node's bits, so the loop terminates.
  while (true) {
    std::optional<SortKey> best_key;
    int best_node = -1, best_candidate = -1;
    for (size_t i = 0; i < problem.nodes.size(); ++i) {
      const ConfigurableNode& node = problem.nodes[i];
      if (node.fixed_candidate.has_value()) continue;
      const BitCandidate current = node.candidates[solution[i]];
      for (size_t j = 0; j < node.candidates.size(); ++j) {
        if (!IsValidUpgrade(current, node.candidates[j], weights_only,
                            activation_only)) {
          continue;
        }
        const std::optional<SortKey> key =
            EvaluateMove(problem, state, i, solution[i], static_cast<int>(j));
        // Strict '<' keeps the first node / candidate on ties, matching
        // Python's min() and sorted() stability.
        if (key.has_value() && (!best_key.has_value() || *key < *best_key)) {
          best_key = key;
          best_node = static_cast<int>(i);
          best_candidate = static_cast<int>(j);
        }
      }
    }
    if (best_node < 0) return solution;
    state.ApplyMove(best_node, solution[best_node], best_candidate);
    solution[best_node] = best_candidate;
  }
}

}  // namespace quantd::mixed_precision
