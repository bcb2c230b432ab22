// Random small bit-allocation problems for tests, with a brute-force oracle.
#ifndef QUANTD_TESTS_CORE_MIXED_PRECISION_TEST_PROBLEMS_H_
#define QUANTD_TESTS_CORE_MIXED_PRECISION_TEST_PROBLEMS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/mixed_precision/bit_allocation_problem.h"

namespace quantd::mixed_precision::testing {

// Calls `visit` for every configuration of the problem (overrides applied).
inline void ForEachConfiguration(
    const BitAllocationProblem& problem,
    const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> config = MinimumConfiguration(problem);
  for (size_t i = 0; i < config.size(); ++i) {
    if (!problem.nodes[i].fixed_candidate.has_value()) config[i] = 0;
  }
  while (true) {
    visit(config);
    size_t i = 0;
    for (; i < config.size(); ++i) {
      const ConfigurableNode& node = problem.nodes[i];
      if (node.fixed_candidate.has_value()) continue;
      if (++config[i] < static_cast<int>(node.candidates.size())) break;
      config[i] = 0;
    }
    if (i == config.size()) return;
  }
}

// Optimal objective by enumeration, nullopt if no configuration is feasible.
inline std::optional<double> BruteForceOptimum(
    const BitAllocationProblem& problem) {
  std::optional<double> best;
  ForEachConfiguration(problem, [&](const std::vector<int>& config) {
    if (!SatisfiesBudgets(problem, config)) return;
    const double objective = Objective(problem, config);
    if (!best.has_value() || objective < *best) best = objective;
  });
  return best;
}

// Bits grow with the candidate index so candidate 0 is the minimum; byte
// figures are integers so the MILP is exact. Sensitivity falls with bits.
inline BitAllocationProblem RandomProblem(std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  const int num_nodes = uniform(2, 6);
  const int num_targets = uniform(1, 3);
  BitAllocationProblem problem;
  const int kBits[4] = {2, 4, 8, 16};
  for (int i = 0; i < num_nodes; ++i) {
    ConfigurableNode node;
    node.name = "node_" + std::to_string(i);
    const int num_candidates = uniform(2, 4);
    double sensitivity = uniform(50, 200) / 10.0;
    for (int j = 0; j < num_candidates; ++j) {
      // Mix weights-only and activation-only steps.
      const bool weights_step = uniform(0, 1) == 1;
      BitCandidate c;
      c.weights_bits = weights_step ? kBits[j] : kBits[0] * (j + 1);
      c.activation_bits = weights_step ? 8 : kBits[j];
      node.candidates.push_back(c);
      node.sensitivity.push_back(sensitivity);
      sensitivity *= uniform(1, 9) / 10.0;
    }
    node.min_candidate = 0;
    problem.nodes.push_back(std::move(node));
  }
  const ResourceTarget kTargets[4] = {
      ResourceTarget::kWeights, ResourceTarget::kActivation,
      ResourceTarget::kTotal, ResourceTarget::kBops};
  int first = uniform(0, 3);
  for (int t = 0; t < num_targets; ++t) {
    ResourceModel model;
    model.target = kTargets[(first + t) % 4];
    const bool cuts = model.target == ResourceTarget::kActivation ||
                      model.target == ResourceTarget::kTotal;
    const int num_elements = cuts ? uniform(1, 3) : 1;
    double max_figure = 0, min_figure = 0;
    for (int k = 0; k < num_elements; ++k) {
      const double base = uniform(0, 100);
      std::vector<std::vector<double>> table;
      double largest = base;
      for (int i = 0; i < num_nodes; ++i) {
        std::vector<double> row(problem.nodes[i].candidates.size(), 0.0);
        const bool live = !cuts || uniform(0, 2) > 0;
        double step_max = 0;
        for (size_t j = 1; j < row.size(); ++j) {
          row[j] = live ? row[j - 1] + uniform(1, 60) : 0.0;
          step_max = row[j];
        }
        largest += step_max;
        table.push_back(std::move(row));
      }
      model.base.push_back(base);
      model.delta.push_back(std::move(table));
      min_figure = std::max(min_figure, base);
      max_figure = std::max(max_figure, largest);
    }
    model.budget =
        min_figure + uniform(0, 100) / 100.0 * (max_figure - min_figure);
    model.budget = static_cast<double>(static_cast<int64_t>(*model.budget));
    problem.resources.push_back(std::move(model));
  }
  return problem;
}

}  // namespace quantd::mixed_precision::testing

#endif  // QUANTD_TESTS_CORE_MIXED_PRECISION_TEST_PROBLEMS_H_
