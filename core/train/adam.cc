#include "core/train/adam.h"

#include <cmath>

#include "core/train/for_each_element.h"

namespace quantd::train {

void Adam::Add(TrainableParam* param) {
  params_.push_back(param);
  m_.emplace_back(param->value.size(), 0.0);
  v_.emplace_back(param->value.size(), 0.0);
  if (param->grad.size() != param->value.size()) param->ZeroGrad();
}

void Adam::Step(ThreadPool* pool) {
  ++t_;
  const double c1 = 1.0 - std::pow(beta1_, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(beta2_, static_cast<double>(t_));
  for (size_t k = 0; k < params_.size(); ++k) {
    TrainableParam& p = *params_[k];
    std::vector<double>& m = m_[k];
    std::vector<double>& v = v_[k];
    ForEachElement(pool, p.value.size(), [&](size_t i) {
      const double g = p.grad[i];
      m[i] = beta1_ * m[i] + (1 - beta1_) * g;
      v[i] = beta2_ * v[i] + (1 - beta2_) * g * g;
      p.value[i] -= lr_ * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps_);
    });
  }
}

void Adam::ZeroGrad() {
  for (TrainableParam* p : params_) p->ZeroGrad();
}

}  // namespace quantd::train
