// Exact bit allocation with COIN-OR CBC (MCT's INTEGER_PROGRAMMING search).
//
// Binary x_ij, sum_j x_ij = 1 per node, minimise sum x_ij * m_ij subject to,
// for every restricted resource t and memory element k,
//   sum_ij x_ij * delta_tk[i][j] <= budget_t - base_tk.
// Overrides fix x_i,fixed = 1. The minimum configuration is checked before CBC
// runs: if it already violates a budget the problem is infeasible and the
// error names, per restricted target, the smallest achievable figure (the
// minimum-configuration figure) against the requested one.
#ifndef QUANTD_CORE_MIXED_PRECISION_MILP_SOLVER_H_
#define QUANTD_CORE_MIXED_PRECISION_MILP_SOLVER_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mixed_precision/bit_allocation_problem.h"

namespace quantd::mixed_precision {

struct MilpOptions {
  // MCT uses PULP_CBC_CMD(timeLimit=60).
  double time_limit_seconds = 60.0;
  // CBC's random seed; CBC runs single-threaded so results are reproducible.
  int random_seed = 1234567;
  // Polled by CBC after each branch-and-bound node (a job's cancellation
  // token); once true, CBC stops and the solve returns CANCELLED.
  std::function<bool()> interrupted;
};

struct BitAllocation {
  // candidate[i] = chosen candidate index of node i.
  std::vector<int> candidate;
  double objective = 0.0;
  // False if the time limit stopped CBC before it proved optimality; the
  // allocation is still feasible (CBC starts from the minimum configuration).
  bool proven_optimal = false;
};

// Validates the problem, pre-checks feasibility, then solves with CBC.
// Errors: INVALID_ARGUMENT (malformed problem), FAILED_PRECONDITION
// (infeasible budget), INTERNAL (CBC failure), CANCELLED (`interrupted`).
absl::StatusOr<BitAllocation> SolveBitAllocation(
    const BitAllocationProblem& problem, const MilpOptions& options = {});

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_MILP_SOLVER_H_
