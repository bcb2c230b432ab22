// Adam (Kingma & Ba; torch.optim.Adam defaults beta1 0.9, beta2 0.999,
// eps 1e-8) over a set of trainable parameters sharing one learning rate.
#ifndef QUANTD_CORE_TRAIN_ADAM_H_
#define QUANTD_CORE_TRAIN_ADAM_H_

#include <cstdint>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/trainable_param.h"

namespace quantd::train {

class Adam {
 public:
  explicit Adam(double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
                double eps = 1e-8)
      : lr_(learning_rate), beta1_(beta1), beta2_(beta2), eps_(eps) {}
  // The parameter must outlive the optimizer.
  void Add(TrainableParam* param);
  // One update of every parameter from its grad, element by element (on
  // `pool` when given: the same values).
  void Step(ThreadPool* pool = nullptr);
  void ZeroGrad();
  bool empty() const { return params_.empty(); }

 private:
  double lr_, beta1_, beta2_, eps_;
  int64_t t_ = 0;
  std::vector<TrainableParam*> params_;
  std::vector<std::vector<double>> m_, v_;
};

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_ADAM_H_
