// MCT's greedy refinement of a MILP solution (refine_mp_solution=True,
// solution_refinement_procedure.py): while some node can move to a larger
// valid candidate without breaking a budget, upgrade the one whose move gives
// the smallest (total, weights, activation) figures. Valid means more bits in
// the restricted dimension and equal bits in the other one when only weights
// or only activation is restricted, and >= in both (not equal) otherwise.
// Skipped when BOPs is restricted, as in MCT.
#ifndef QUANTD_CORE_MIXED_PRECISION_REFINEMENT_H_
#define QUANTD_CORE_MIXED_PRECISION_REFINEMENT_H_

#include <vector>

#include "core/mixed_precision/bit_allocation_problem.h"

namespace quantd::mixed_precision {

// `solution` must satisfy the budgets of a validated problem; overridden
// nodes are never moved. Returns the refined configuration.
std::vector<int> RefineBitAllocation(const BitAllocationProblem& problem,
                                     std::vector<int> solution);

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_REFINEMENT_H_
