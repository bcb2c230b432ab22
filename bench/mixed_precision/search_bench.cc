// Solve time of the CBC bit allocation and of the greedy refinement as the
// number of configurable nodes grows (3 candidates: 2/4/8-bit weights, 8-bit
// activations). Budgets: weights at 60% of the 8-bit figure, activation
// (8 memory cuts) at 80%, as in a typical `--mp weights=0.6,activation=0.8`.
// Counters: proven_optimal (1 if CBC proved optimality within the limit) and
// objective relative to the min-config objective.
#include <random>

#include "benchmark/benchmark.h"
#include "core/mixed_precision/milp_solver.h"
#include "core/mixed_precision/refinement.h"

namespace quantd::mixed_precision {
namespace {

BitAllocationProblem MakeProblem(int num_nodes) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> params(1000, 100000);
  std::uniform_real_distribution<double> noise(0.5, 1.5);
  const int kCuts = 8;
  BitAllocationProblem problem;
  ResourceModel weights{ResourceTarget::kWeights, std::nullopt, {0.0}, {{}}};
  ResourceModel activation{
      ResourceTarget::kActivation, std::nullopt,
      std::vector<double>(kCuts, 0.0),
      std::vector<std::vector<std::vector<double>>>(kCuts)};
  double weights_8bit = 0;
  std::vector<double> activation_8bit(kCuts, 0.0);
  for (int i = 0; i < num_nodes; ++i) {
    ConfigurableNode node;
    node.name = "conv_" + std::to_string(i);
    node.candidates = {{2, 8}, {4, 8}, {8, 8}};
    const double base = noise(rng);
    // Error roughly quarters with every doubling of bits.
    node.sensitivity = {base, base / 16, base / 256};
    problem.nodes.push_back(node);
    const double p = params(rng);
    weights.base[0] += p * 2 / 8;
    weights.delta[0].push_back({0, p * 2 / 8, p * 6 / 8});
    weights_8bit += p;
    // Node i's output tensor (8-bit, fixed) lives in cut i % kCuts; its
    // weights bits do not change activation memory, so deltas are 0 there.
    const double tensor = params(rng);
    for (int k = 0; k < kCuts; ++k) {
      activation.delta[k].push_back({0, 0, 0});
      if (i % kCuts == k) {
        activation.base[k] += tensor;
        activation_8bit[k] += tensor;
      }
    }
  }
  weights.budget = 0.6 * weights_8bit;
  double max_act = 0;
  for (double a : activation_8bit) max_act = std::max(max_act, a);
  activation.budget = max_act;  // Activations stay at 8 bits: 100% fits.
  problem.resources = {weights, activation};
  return problem;
}

void BM_SolveBitAllocation(benchmark::State& state) {
  const BitAllocationProblem problem = MakeProblem(state.range(0));
  const double min_objective =
      Objective(problem, MinimumConfiguration(problem));
  MilpOptions options;
  options.time_limit_seconds = 30;
  bool optimal = true;
  double objective = 0;
  for (auto _ : state) {
    auto result = SolveBitAllocation(problem, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    optimal = optimal && result->proven_optimal;
    objective = result->objective;
    benchmark::DoNotOptimize(result->candidate.data());
  }
  state.counters["proven_optimal"] = optimal ? 1 : 0;
  state.counters["objective_vs_min_config"] = objective / min_objective;
}
BENCHMARK(BM_SolveBitAllocation)
    ->Arg(10)
    ->Arg(50)
    ->Arg(200)
    ->Arg(500)
    ->Unit(benchmark::kMillisecond);

void BM_RefineBitAllocation(benchmark::State& state) {
  const BitAllocationProblem problem = MakeProblem(state.range(0));
  const std::vector<int> start = MinimumConfiguration(problem);
  for (auto _ : state) {
    std::vector<int> refined = RefineBitAllocation(problem, start);
    benchmark::DoNotOptimize(refined.data());
  }
}
BENCHMARK(BM_RefineBitAllocation)
    ->Arg(10)
    ->Arg(50)
    ->Arg(200)
    ->Arg(500)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace quantd::mixed_precision
