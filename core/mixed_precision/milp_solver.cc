#include "core/mixed_precision/milp_solver.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coin/Cbc_C_Interface.h"
#include "core/util/status_macros.h"

namespace quantd::mixed_precision {
namespace {

struct CbcModelDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};
using CbcModelPtr = std::unique_ptr<Cbc_Model, CbcModelDeleter>;

// FAILED_PRECONDITION listing every restricted target whose minimum figure
// exceeds the budget, or OK.
absl::Status CheckFeasible(const BitAllocationProblem& problem,
                           const std::vector<int>& min_config) {
  std::vector<std::string> violations;
  for (const ResourceModel& model : problem.resources) {
    if (!model.budget.has_value()) continue;
    const double smallest = ResourceValue(model, min_config);
    if (!WithinBudget(smallest, *model.budget)) {
      violations.push_back(absl::StrCat(ResourceTargetName(model.target),
                                        ": smallest achievable ", smallest,
                                        " > requested ", *model.budget));
    }
  }
  if (violations.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the model cannot be quantized to meet the resource utilization "
      "targets (",
      absl::StrJoin(violations, "; "), ")"));
}

}  // namespace

absl::StatusOr<BitAllocation> SolveBitAllocation(
    const BitAllocationProblem& problem, const MilpOptions& options) {
  RETURN_IF_ERROR(ValidateProblem(problem));
  if (!(options.time_limit_seconds > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "time_limit_seconds = ", options.time_limit_seconds, ", expected > 0"));
  }
  const std::vector<int> min_config = MinimumConfiguration(problem);
  RETURN_IF_ERROR(CheckFeasible(problem, min_config));

  const size_t num_nodes = problem.nodes.size();
  std::vector<int> first_column(num_nodes + 1, 0);
  for (size_t i = 0; i < num_nodes; ++i) {
    first_column[i + 1] =
        first_column[i] + static_cast<int>(problem.nodes[i].candidates.size());
  }

  CbcModelPtr model(Cbc_newModel());
  if (model == nullptr) return absl::InternalError("CBC: cannot create model");
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setParameter(model.get(), "log", "0");
  Cbc_setParameter(model.get(), "slog", "0");
  Cbc_setParameter(model.get(), "threads", "0");
  Cbc_setParameter(model.get(), "randomCbcSeed",
                   std::to_string(options.random_seed).c_str());
  Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
  Cbc_setAllowableGap(model.get(), 0.0);
  Cbc_setAllowableFractionGap(model.get(), 0.0);
  Cbc_setObjSense(model.get(), 1.0);
  // CBC 2.10.8's preprocessing (CglPreProcess) returns non-optimal solutions
  // it reports as proven optimal on small instances of this model (found by
  // the brute-force test); the instances are small enough to solve without.
  Cbc_setParameter(model.get(), "preprocess", "off");

  for (size_t i = 0; i < num_nodes; ++i) {
    const ConfigurableNode& node = problem.nodes[i];
    for (size_t j = 0; j < node.candidates.size(); ++j) {
      double upper = 1.0, lower = 0.0;
      if (node.fixed_candidate.has_value()) {
        const bool chosen = static_cast<int>(j) == *node.fixed_candidate;
        lower = chosen ? 1.0 : 0.0;
        upper = lower;
      }
      const std::string name = absl::StrCat("x_", i, "_", j);
      Cbc_addCol(model.get(), name.c_str(), lower, upper, node.sensitivity[j],
                 /*isInteger=*/1, 0, nullptr, nullptr);
    }
  }
  std::vector<int> columns;
  std::vector<double> coefficients;
  for (size_t i = 0; i < num_nodes; ++i) {
    columns.clear();
    coefficients.clear();
    for (int c = first_column[i]; c < first_column[i + 1]; ++c) {
      columns.push_back(c);
      coefficients.push_back(1.0);
    }
    const std::string name = absl::StrCat("one_of_", i);
    Cbc_addRow(model.get(), name.c_str(), static_cast<int>(columns.size()),
               columns.data(), coefficients.data(), 'E', 1.0);
  }
  for (const ResourceModel& resource : problem.resources) {
    if (!resource.budget.has_value()) continue;
    for (size_t k = 0; k < resource.base.size(); ++k) {
      columns.clear();
      coefficients.clear();
      for (size_t i = 0; i < num_nodes; ++i) {
        for (size_t j = 0; j < resource.delta[k][i].size(); ++j) {
          const double d = resource.delta[k][i][j];
          if (d == 0.0) continue;
          columns.push_back(first_column[i] + static_cast<int>(j));
          coefficients.push_back(d);
        }
      }
      if (columns.empty()) continue;  // Constant row, satisfied by pre-check.
      const std::string name =
          absl::StrCat(ResourceTargetName(resource.target), "_", k);
      Cbc_addRow(model.get(), name.c_str(), static_cast<int>(columns.size()),
                 columns.data(), coefficients.data(), 'L',
                 *resource.budget - resource.base[k]);
    }
  }

  // The minimum configuration is feasible (pre-checked): a MIP start
  // guarantees an answer even when the time limit cuts the search short.
  std::vector<int> start_columns(num_nodes);
  std::vector<double> start_values(num_nodes, 1.0);
  for (size_t i = 0; i < num_nodes; ++i) {
    start_columns[i] = first_column[i] + min_config[i];
  }
  Cbc_setMIPStartI(model.get(), static_cast<int>(num_nodes),
                   start_columns.data(), start_values.data());

  Cbc_solve(model.get());
  if (Cbc_isProvenInfeasible(model.get())) {
    return absl::InternalError(
        "CBC reports the bit allocation infeasible although the minimum "
        "configuration satisfies every budget");
  }
  const double* solution = Cbc_bestSolution(model.get());
  if (solution == nullptr) {
    return absl::InternalError(
        absl::StrCat("CBC found no solution (status ", Cbc_status(model.get()),
                     ", secondary ", Cbc_secondaryStatus(model.get()), ")"));
  }

  BitAllocation allocation;
  allocation.candidate.resize(num_nodes, -1);
  for (size_t i = 0; i < num_nodes; ++i) {
    double best = 0.5;
    for (int c = first_column[i]; c < first_column[i + 1]; ++c) {
      if (solution[c] > best) {
        best = solution[c];
        allocation.candidate[i] = c - first_column[i];
      }
    }
    if (allocation.candidate[i] < 0) {
      return absl::InternalError(
          absl::StrCat("CBC solution selects no candidate for node '",
                       problem.nodes[i].name, "'"));
    }
  }
  // CBC's feasibility tolerance is looser than ours; never hand out an
  // allocation that breaks a budget.
  if (!SatisfiesBudgets(problem, allocation.candidate)) {
    return absl::InternalError(
        "CBC returned an allocation that exceeds a budget");
  }
  allocation.objective = Objective(problem, allocation.candidate);
  allocation.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
  return allocation;
}

}  // namespace quantd::mixed_precision
