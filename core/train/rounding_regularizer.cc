#include "core/train/rounding_regularizer.h"

#include <algorithm>
#include <cmath>

#include "core/train/weight_quantizers.h"

namespace quantd::train {

double BetaSchedule::At(int64_t step, int64_t total) const {
  const double t =
      total <= 0 ? 1.0 : static_cast<double>(step) / static_cast<double>(total);
  if (t < warmup) return -1;
  const double rel = (t - warmup) / (1.0 - warmup);
  return end + (start - end) * std::max(0.0, 1.0 - rel);
}

double AddRoundingRegularization(double factor, double beta,
                                 TrainableParam* v) {
  double reg = 0;
  for (size_t i = 0; i < v->value.size(); ++i) {
    const double h = SoftRoundingH(v->value[i]);
    const double u = 2 * h - 1;
    const double au = std::fabs(u);
    reg += 1 - std::pow(au, beta);
    // d/dh (1 - |2h-1|^beta) = -beta |u|^(beta-1) sign(u) * 2.
    const double dh =
        au > 0 ? -beta * std::pow(au, beta - 1) * (u > 0 ? 2.0 : -2.0) : 0.0;
    v->grad[i] += factor * dh * SoftRoundingDh(v->value[i]);
  }
  return factor * reg;
}

}  // namespace quantd::train
