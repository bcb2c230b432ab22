#include "core/mixed_precision/milp_solver.h"

#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coin/CbcEventHandler.hpp"
#include "coin/CbcModel.hpp"
#include "coin/CoinError.hpp"
#include "coin/CoinPackedMatrix.hpp"
#include "coin/OsiClpSolverInterface.hpp"
#include "core/util/status_macros.h"

namespace quantd::mixed_precision {
namespace {

// Byte and bit-op counts are integers: print them whole, not as 1.23457e+06.
std::string FormatFigure(double value) {
  if (std::abs(value) < 1e15 && value == std::floor(value)) {
    return absl::StrFormat("%.0f", value);
  }
  return absl::StrFormat("%.6g", value);
}

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
                                        ": smallest achievable ",
                                        FormatFigure(smallest), " > requested ",
                                        FormatFigure(*model.budget)));
    }
  }
  if (violations.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the model cannot be quantized to meet the resource utilization "
      "targets (",
      absl::StrJoin(violations, "; "), ")"));
}

// Stops branch and bound once MilpOptions::interrupted says so (CBC polls
// its event handler after every node and at tree-status intervals).
class InterruptHandler : public CbcEventHandler {
 public:
  explicit InterruptHandler(std::function<bool()> interrupted)
      : interrupted_(std::move(interrupted)) {}
  CbcAction event(CbcEvent) override {
    return interrupted_() ? stop : noAction;
  }
  CbcEventHandler* clone() const override {
    return new InterruptHandler(*this);
  }

 private:
  std::function<bool()> interrupted_;
};

absl::StatusOr<BitAllocation> SolveWithCbc(const BitAllocationProblem& problem,
                                           const MilpOptions& options) {
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

  const int num_columns = first_column[num_nodes];
  std::vector<double> column_lower(num_columns, 0.0);
  std::vector<double> column_upper(num_columns, 1.0);
  std::vector<double> cost(num_columns, 0.0);
  for (size_t i = 0; i < num_nodes; ++i) {
    const ConfigurableNode& node = problem.nodes[i];
    for (size_t j = 0; j < node.candidates.size(); ++j) {
      const int c = first_column[i] + static_cast<int>(j);
      cost[c] = node.sensitivity[j];
      if (node.fixed_candidate.has_value()) {
        const bool chosen = static_cast<int>(j) == *node.fixed_candidate;
        column_lower[c] = column_upper[c] = chosen ? 1.0 : 0.0;
      }
    }
  }
  CoinPackedMatrix matrix(/*colordered=*/false, 0, 0);
  matrix.setDimensions(0, num_columns);
  std::vector<double> row_lower, row_upper;
  std::vector<int> columns;
  std::vector<double> coefficients;
  for (size_t i = 0; i < num_nodes; ++i) {
    columns.clear();
    coefficients.clear();
    for (int c = first_column[i]; c < first_column[i + 1]; ++c) {
      columns.push_back(c);
      coefficients.push_back(1.0);
    }
    matrix.appendRow(static_cast<int>(columns.size()), columns.data(),
                     coefficients.data());
    row_lower.push_back(1.0);
    row_upper.push_back(1.0);
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
      matrix.appendRow(static_cast<int>(columns.size()), columns.data(),
                       coefficients.data());
      row_lower.push_back(-COIN_DBL_MAX);
      row_upper.push_back(*resource.budget - resource.base[k]);
    }
  }

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, column_lower.data(), column_upper.data(),
                     cost.data(), row_lower.data(), row_upper.data());
  for (int c = 0; c < num_columns; ++c) solver.setInteger(c);

  // Plain branch and bound on CbcModel: CBC 2.10.8's CbcMain1 path (the C
  // interface) returned non-optimal answers flagged optimal and hit Clp
  // assertions on small instances found by the brute-force tests.
  CbcModel cbc(solver);
  cbc.setLogLevel(0);
  cbc.messageHandler()->setLogLevel(0);
  cbc.solver()->messageHandler()->setLogLevel(0);
  // A service deadline is wall-clock time, not CPU time (CBC's default).
  cbc.setUseElapsedTime(true);
  cbc.setMaximumSeconds(options.time_limit_seconds);
  cbc.setAllowableGap(0.0);
  cbc.setAllowableFractionGap(0.0);
  cbc.setAllowablePercentageGap(0.0);
  cbc.setRandomSeed(options.random_seed);

  // The minimum configuration is feasible (pre-checked): starting from it
  // guarantees an answer even when the time limit cuts the search short.
  std::vector<double> start(num_columns, 0.0);
  for (size_t i = 0; i < num_nodes; ++i) {
    start[first_column[i] + min_config[i]] = 1.0;
  }
  cbc.setBestSolution(start.data(), num_columns, Objective(problem, min_config),
                      /*check=*/false);

  if (options.interrupted) {
    if (options.interrupted()) return absl::CancelledError("solve interrupted");
    InterruptHandler handler(options.interrupted);
    cbc.passInEventHandler(&handler);  // CBC keeps a clone
  }
  cbc.branchAndBound();
  if (options.interrupted && options.interrupted()) {
    return absl::CancelledError("solve interrupted");
  }
  const double* solution = cbc.bestSolution();
  if (solution == nullptr) {
    return absl::InternalError(absl::StrCat("CBC found no solution (status ",
                                            cbc.status(), ", secondary ",
                                            cbc.secondaryStatus(), ")"));
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
  allocation.proven_optimal = cbc.isProvenOptimal();
  return allocation;
}

}  // namespace

absl::StatusOr<BitAllocation> SolveBitAllocation(
    const BitAllocationProblem& problem, const MilpOptions& options) {
  // COIN-OR reports failures with C++ exceptions; they stop here.
  try {
    return SolveWithCbc(problem, options);
  } catch (const CoinError& e) {
    return absl::InternalError(absl::StrCat(
        "CBC: ", e.className(), "::", e.methodName(), ": ", e.message()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CBC: ", e.what()));
  }
}

}  // namespace quantd::mixed_precision
