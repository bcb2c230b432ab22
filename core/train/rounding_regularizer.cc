#include "core/train/rounding_regularizer.h"

#include <algorithm>
#include <cmath>

#include "core/train/for_each_element.h"
#include "core/train/weight_quantizers.h"

namespace quantd::train {

double BetaSchedule::At(int64_t step, int64_t total) const {
  const double t =
      total <= 0 ? 1.0 : static_cast<double>(step) / static_cast<double>(total);
  if (t < warmup) return -1;
  const double rel = (t - warmup) / (1.0 - warmup);
  return end + (start - end) * std::max(0.0, 1.0 - rel);
}

namespace {

// factor * d/dV (1 - |2h - 1|^beta) from s = sigmoid(V):
// d/dh = -beta |u|^(beta-1) sign(u) * 2 with u = 2h - 1.
double GradientOfSigmoid(double factor, double beta, double s) {
  const double u = 2 * SoftRoundingHOfSigmoid(s) - 1;
  const double au = std::fabs(u);
  const double dh =
      au > 0 ? -beta * std::pow(au, beta - 1) * (u > 0 ? 2.0 : -2.0) : 0.0;
  return factor * dh * SoftRoundingDhOfSigmoid(s);
}

}  // namespace

double AddRoundingRegularization(double factor, double beta,
                                 TrainableParam* v) {
  double reg = 0;
  for (size_t i = 0; i < v->value.size(); ++i) {
    const double s = SoftRoundingSigmoid(v->value[i]);
    reg += 1 - std::pow(std::fabs(2 * SoftRoundingHOfSigmoid(s) - 1), beta);
    v->grad[i] += GradientOfSigmoid(factor, beta, s);
  }
  return factor * reg;
}

void AddRoundingRegularizationGradient(double factor, double beta,
                                       const std::vector<double>& sigmoid,
                                       TrainableParam* v, ThreadPool* pool) {
  ForEachElement(pool, sigmoid.size(), [&](size_t i) {
    v->grad[i] += GradientOfSigmoid(factor, beta, sigmoid[i]);
  });
}

}  // namespace quantd::train
