// MCT's soft-rounding regularization (soft_quantizer_reg.py):
//   reg = factor * sum_i (1 - |2 h(V_i) - 1|^beta)
// with beta annealed linearly from 20 to 2 between the end of the warm-up
// (20% of the steps, where the term is off) and the last step.
#ifndef QUANTD_CORE_TRAIN_ROUNDING_REGULARIZER_H_
#define QUANTD_CORE_TRAIN_ROUNDING_REGULARIZER_H_

#include <cstdint>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/trainable_param.h"

namespace quantd::train {

struct BetaSchedule {
  double start = 20, end = 2, warmup = 0.2;
  // beta at `step` of `total`; negative during the warm-up (term off).
  double At(int64_t step, int64_t total) const;
};

// Adds factor * d reg / dV to v->grad and returns reg (v holds V).
double AddRoundingRegularization(double factor, double beta, TrainableParam* v);

// The same gradient, without reg (training never reads it), from
// sigmoid[i] = SoftRoundingSigmoid(V_i), split over `pool` (null: inline):
// each weight's gradient is the same double as above.
void AddRoundingRegularizationGradient(double factor, double beta,
                                       const std::vector<double>& sigmoid,
                                       TrainableParam* v, ThreadPool* pool);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_ROUNDING_REGULARIZER_H_
