#include "core/train/activations.h"

#include <algorithm>
#include <cmath>

namespace quantd::train {

std::string ActivationName(const Activation& act) {
  switch (act.kind) {
    case Activation::Kind::kIdentity:
      return "Identity";
    case Activation::Kind::kRelu:
      return "Relu";
    case Activation::Kind::kClip:
      return "Clip";
    case Activation::Kind::kLeakyRelu:
      return "LeakyRelu";
    case Activation::Kind::kHardSigmoid:
      return "HardSigmoid";
    case Activation::Kind::kHardSwish:
      return "HardSwish";
    case Activation::Kind::kSigmoid:
      return "Sigmoid";
    case Activation::Kind::kTanh:
      return "Tanh";
  }
  return "?";
}

double ActivationForward(const Activation& act, double x) {
  switch (act.kind) {
    case Activation::Kind::kIdentity:
      return x;
    case Activation::Kind::kRelu:
      return x > 0 ? x : 0.0;
    case Activation::Kind::kClip:
      return std::min(std::max(x, act.a), act.b);
    case Activation::Kind::kLeakyRelu:
      return x >= 0 ? x : act.a * x;
    case Activation::Kind::kHardSigmoid:
      return std::min(std::max(act.a * x + act.b, 0.0), 1.0);
    case Activation::Kind::kHardSwish:
      return x * std::min(std::max(act.a * x + act.b, 0.0), 1.0);
    case Activation::Kind::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::Kind::kTanh:
      return std::tanh(x);
  }
  return x;
}

double ActivationDerivative(const Activation& act, double x) {
  switch (act.kind) {
    case Activation::Kind::kIdentity:
      return 1.0;
    case Activation::Kind::kRelu:
      return x > 0 ? 1.0 : 0.0;
    case Activation::Kind::kClip:
      return x > act.a && x < act.b ? 1.0 : 0.0;
    case Activation::Kind::kLeakyRelu:
      return x >= 0 ? 1.0 : act.a;
    case Activation::Kind::kHardSigmoid: {
      const double t = act.a * x + act.b;
      return t > 0 && t < 1 ? act.a : 0.0;
    }
    case Activation::Kind::kHardSwish: {
      const double t = act.a * x + act.b;
      if (t <= 0) return 0.0;
      if (t >= 1) return 1.0;
      return t + act.a * x;
    }
    case Activation::Kind::kSigmoid: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 - s);
    }
    case Activation::Kind::kTanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
  }
  return 1.0;
}

void ActivationForward(const Activation& act, const std::vector<double>& x,
                       std::vector<double>* y) {
  y->resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) (*y)[i] = ActivationForward(act, x[i]);
}

void ActivationBackward(const Activation& act, const std::vector<double>& x,
                        const std::vector<double>& dy,
                        std::vector<double>* dx) {
  dx->resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    (*dx)[i] = ActivationDerivative(act, x[i]) * dy[i];
  }
}

namespace {

// ActivationDerivative with the kind known at compile time (inlined, its
// switch folded).
template <Activation::Kind K>
void BackwardLoop(const Activation& act, const float* x, const float* dy,
                  float* dx, int64_t n) {
  Activation a = act;
  a.kind = K;
  for (int64_t i = 0; i < n; ++i) {
    dx[i] = static_cast<float>(ActivationDerivative(a, x[i]) * dy[i]);
  }
}

}  // namespace

void ActivationBackward(const Activation& act, const float* x, const float* dy,
                        float* dx, int64_t n) {
  using Kind = Activation::Kind;
  switch (act.kind) {
    case Kind::kIdentity:
      return BackwardLoop<Kind::kIdentity>(act, x, dy, dx, n);
    case Kind::kRelu:
      return BackwardLoop<Kind::kRelu>(act, x, dy, dx, n);
    case Kind::kClip:
      return BackwardLoop<Kind::kClip>(act, x, dy, dx, n);
    case Kind::kLeakyRelu:
      return BackwardLoop<Kind::kLeakyRelu>(act, x, dy, dx, n);
    case Kind::kHardSigmoid:
      return BackwardLoop<Kind::kHardSigmoid>(act, x, dy, dx, n);
    case Kind::kHardSwish:
      return BackwardLoop<Kind::kHardSwish>(act, x, dy, dx, n);
    case Kind::kSigmoid:
      return BackwardLoop<Kind::kSigmoid>(act, x, dy, dx, n);
    case Kind::kTanh:
      return BackwardLoop<Kind::kTanh>(act, x, dy, dx, n);
  }
}

}  // namespace quantd::train
