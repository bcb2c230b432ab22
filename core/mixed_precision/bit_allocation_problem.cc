#include "core/mixed_precision/bit_allocation_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace quantd::mixed_precision {

absl::string_view ResourceTargetName(ResourceTarget target) {
  switch (target) {
    case ResourceTarget::kWeights:
      return "weights";
    case ResourceTarget::kActivation:
      return "activation";
    case ResourceTarget::kTotal:
      return "total";
    case ResourceTarget::kBops:
      return "bops";
  }
  return "unknown";
}

namespace {

absl::Status ValidateNode(const ConfigurableNode& node, size_t i) {
  const std::string where = absl::StrCat("nodes[", i, "] ('", node.name, "')");
  const size_t n = node.candidates.size();
  if (n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": no candidates"));
  }
  if (node.sensitivity.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", node.sensitivity.size(),
                     " sensitivities for ", n, " candidates"));
  }
  for (size_t j = 0; j < n; ++j) {
    const double m = node.sensitivity[j];
    if (!std::isfinite(m) || m < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".sensitivity[", j, "] = ", m,
                       ", expected a finite value >= 0"));
    }
    if (node.candidates[j].weights_bits <= 0 ||
        node.candidates[j].activation_bits <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".candidates[", j, "]: bits must be positive"));
    }
  }
  if (node.min_candidate < 0 || static_cast<size_t>(node.min_candidate) >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".min_candidate = ", node.min_candidate,
                     " out of range [0, ", n, ")"));
  }
  if (node.fixed_candidate.has_value() &&
      (*node.fixed_candidate < 0 ||
       static_cast<size_t>(*node.fixed_candidate) >= n)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".fixed_candidate = ", *node.fixed_candidate,
                     " out of range [0, ", n, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateResource(const ResourceModel& model, size_t t,
                              const std::vector<ConfigurableNode>& nodes) {
  const std::string where = absl::StrCat("resources[", t, "] (",
                                         ResourceTargetName(model.target), ")");
  if (model.base.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no memory elements"));
  }
  if (model.delta.size() != model.base.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", model.delta.size(), " delta tables for ",
                     model.base.size(), " memory elements"));
  }
  if (model.budget.has_value() && !std::isfinite(*model.budget)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".budget is not finite"));
  }
  for (size_t k = 0; k < model.base.size(); ++k) {
    if (!std::isfinite(model.base[k])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".base[", k, "] is not finite"));
    }
    const auto& table = model.delta[k];
    if (table.size() != nodes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".delta[", k, "]: ", table.size(), " rows for ",
                       nodes.size(), " nodes"));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (table[i].size() != nodes[i].candidates.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".delta[", k, "][", i, "] ('", nodes[i].name,
                         "'): ", table[i].size(), " values for ",
                         nodes[i].candidates.size(), " candidates"));
      }
      for (size_t j = 0; j < table[i].size(); ++j) {
        if (!std::isfinite(table[i][j])) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ".delta[", k, "][", i, "][", j, "] is not finite"));
        }
      }
      if (table[i][nodes[i].min_candidate] != 0.0) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ".delta[", k, "][", i, "] ('", nodes[i].name,
            "'): delta at the minimum candidate ", nodes[i].min_candidate,
            " is ", table[i][nodes[i].min_candidate], ", expected 0"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProblem(const BitAllocationProblem& problem) {
  if (problem.nodes.empty()) {
    return absl::InvalidArgumentError("nodes: no configurable nodes");
  }
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    if (absl::Status s = ValidateNode(problem.nodes[i], i); !s.ok()) return s;
  }
  bool seen[4] = {false, false, false, false};
  for (size_t t = 0; t < problem.resources.size(); ++t) {
    const ResourceModel& model = problem.resources[t];
    const int index = static_cast<int>(model.target);
    if (index < 0 || index > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("resources[", t, "]: unknown target ", index));
    }
    if (seen[index]) {
      return absl::InvalidArgumentError(
          absl::StrCat("resources[", t, "]: target '",
                       ResourceTargetName(model.target), "' given twice"));
    }
    seen[index] = true;
    if (absl::Status s = ValidateResource(model, t, problem.nodes); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

double ResourceValue(const ResourceModel& model, absl::Span<const int> config) {
  double best = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < model.base.size(); ++k) {
    double value = model.base[k];
    for (size_t i = 0; i < config.size(); ++i) {
      value += model.delta[k][i][config[i]];
    }
    best = std::max(best, value);
  }
  return best;
}

std::vector<int> MinimumConfiguration(const BitAllocationProblem& problem) {
  std::vector<int> config(problem.nodes.size());
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const ConfigurableNode& node = problem.nodes[i];
    config[i] = node.fixed_candidate.value_or(node.min_candidate);
  }
  return config;
}

bool WithinBudget(double value, double budget) {
  return value <= budget + 1e-9 * std::max(1.0, std::abs(budget));
}

bool SatisfiesBudgets(const BitAllocationProblem& problem,
                      absl::Span<const int> config) {
  for (const ResourceModel& model : problem.resources) {
    if (model.budget.has_value() &&
        !WithinBudget(ResourceValue(model, config), *model.budget)) {
      return false;
    }
  }
  return true;
}

double Objective(const BitAllocationProblem& problem,
                 absl::Span<const int> config) {
  double sum = 0;
  for (size_t i = 0; i < config.size(); ++i) {
    sum += problem.nodes[i].sensitivity[config[i]];
  }
  return sum;
}

const ResourceModel* FindResource(const BitAllocationProblem& problem,
                                  ResourceTarget target) {
  for (const ResourceModel& model : problem.resources) {
    if (model.target == target) return &model;
  }
  return nullptr;
}

}  // namespace quantd::mixed_precision
