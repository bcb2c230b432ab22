// A trainable variable with its gradient, grouped like MCT's VariableGroup
// so each group gets its own optimizer (learning rate).
#ifndef QUANTD_CORE_TRAIN_TRAINABLE_PARAM_H_
#define QUANTD_CORE_TRAIN_TRAINABLE_PARAM_H_

#include <string>
#include <vector>

namespace quantd::train {

enum class VariableGroup {
  kWeights,  // float weights trained through STE (QAT)
  kQparams,  // thresholds / ranges (LSQ)
  kAux,      // GPTQ rounding variables (soft rounding V, STE shift)
  kBias,
};

struct TrainableParam {
  std::string name;
  VariableGroup group = VariableGroup::kWeights;
  std::vector<double> value;
  std::vector<double> grad;  // same size; Backward() accumulates into it

  void ZeroGrad() { grad.assign(value.size(), 0.0); }
};

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_TRAINABLE_PARAM_H_
