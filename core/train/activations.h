// Element-wise activations of a reconstruction block (ONNX semantics) with
// their derivatives: Relu, Clip, LeakyRelu, HardSigmoid, HardSwish (also
// x * HardSigmoid(x) with any alpha/beta), Sigmoid, Tanh. At a kink the
// derivative of the side the comparison puts x on is used (x > 0 for Relu).
#ifndef QUANTD_CORE_TRAIN_ACTIVATIONS_H_
#define QUANTD_CORE_TRAIN_ACTIVATIONS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace quantd::train {

struct Activation {
  enum class Kind {
    kIdentity,
    kRelu,
    kClip,         // a = min, b = max
    kLeakyRelu,    // a = alpha
    kHardSigmoid,  // a = alpha, b = beta: max(0, min(1, a x + b))
    kHardSwish,    // x * HardSigmoid(x) (ONNX: a = 1/6, b = 0.5)
    kSigmoid,
    kTanh,
  };
  Kind kind = Kind::kIdentity;
  double a = 0, b = 0;
};

std::string ActivationName(const Activation& act);
double ActivationForward(const Activation& act, double x);
double ActivationDerivative(const Activation& act, double x);

// y = f(x); dx = f'(x) * dy (x is the forward input).
void ActivationForward(const Activation& act, const std::vector<double>& x,
                       std::vector<double>* y);
void ActivationBackward(const Activation& act, const std::vector<double>& x,
                        const std::vector<double>& dy, std::vector<double>* dx);

// dx[i] = float(ActivationDerivative(act, x[i]) * dy[i]) over n floats (the
// autodiff's element-wise backward passes): the same arithmetic, the kind
// dispatched once instead of per element.
void ActivationBackward(const Activation& act, const float* x, const float* dy,
                        float* dx, int64_t n);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_ACTIVATIONS_H_
