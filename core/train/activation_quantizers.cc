#include "core/train/activation_quantizers.h"

#include <algorithm>
#include <cmath>

namespace quantd::train {
namespace {

double Clip(double x, double lo, double hi) {
  return std::min(std::max(x, lo), hi);
}

class SteActivationQuantizer final : public TrainableActivationQuantizer {
 public:
  explicit SteActivationQuantizer(const ActivationGridSpec& spec)
      : spec_(spec), grid_(ActivationGridOf(spec)) {}
  void Forward(const std::vector<double>& x, std::vector<double>* y) override {
    const double s = grid_.scale[0], z = grid_.zero_point[0];
    y->resize(x.size());
    in_.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double r = std::nearbyint(x[i] / s + z);
      in_[i] = r >= grid_.qmin && r <= grid_.qmax;
      (*y)[i] = s * (Clip(r, grid_.qmin, grid_.qmax) - z);
    }
  }
  void Backward(const std::vector<double>& dy,
                std::vector<double>* dx) override {
    dx->resize(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) (*dx)[i] = in_[i] ? dy[i] : 0.0;
  }
  std::vector<TrainableParam*> Params() override { return {}; }
  ActivationGridSpec Convert() const override {
    ActivationGridSpec out = spec_;
    if (out.kind == WeightGridSpec::Kind::kPowerOfTwo) {
      out.threshold = SnapToPowerOfTwo(out.threshold, out.min_threshold);
    }
    return out;
  }

 private:
  ActivationGridSpec spec_;
  QuantGrid grid_;
  std::vector<char> in_;
};

class LsqActivationQuantizer final : public TrainableActivationQuantizer {
 public:
  LsqActivationQuantizer(const ActivationGridSpec& spec, int64_t channels)
      : spec_(spec) {
    const QuantGrid g = ActivationGridOf(spec);
    qmin_ = g.qmin;
    qmax_ = g.qmax;
    uniform_ = spec.kind == WeightGridSpec::Kind::kUniform;
    if (uniform_) {
      lo_.name = "range_min";
      hi_.name = "range_max";
      lo_.value = {-g.zero_point[0] * g.scale[0]};
      hi_.value = {lo_.value[0] + qmax_ * g.scale[0]};
      hi_.group = VariableGroup::kQparams;
      hi_.ZeroGrad();
    } else {
      lo_.name = "threshold";
      levels_ = std::ldexp(1.0, spec.n_bits - (spec.is_signed ? 1 : 0));
      lo_.value = {g.scale[0] * levels_};
    }
    lo_.group = VariableGroup::kQparams;
    lo_.ZeroGrad();
    grad_scale_ =
        1.0 /
        std::sqrt(qmax_ * static_cast<double>(std::max<int64_t>(channels, 1)));
  }
  void Forward(const std::vector<double>& x, std::vector<double>* y) override {
    const double s = Step(), a = uniform_ ? lo_.value[0] : 0.0;
    y->resize(x.size());
    xs_.resize(x.size());
    q_.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xs_[i] = (x[i] - a) / s;
      q_[i] = Clip(std::nearbyint(xs_[i]), qmin_, qmax_);
      (*y)[i] = s * q_[i] + a;
    }
  }
  // Same derivation as LsqWeightQuantizer::Backward.
  void Backward(const std::vector<double>& dy,
                std::vector<double>* dx) override {
    dx->resize(dy.size());
    double ds = 0, da = 0;
    for (size_t i = 0; i < dy.size(); ++i) {
      const double r = std::nearbyint(xs_[i]);
      const bool in = r >= qmin_ && r <= qmax_;
      (*dx)[i] = in ? dy[i] : 0.0;
      ds += dy[i] * (q_[i] - (in ? xs_[i] : 0.0));
      da += in ? 0.0 : dy[i];
    }
    ds *= grad_scale_;
    da *= grad_scale_;
    if (uniform_) {
      lo_.grad[0] += da - ds / qmax_;
      hi_.grad[0] += ds / qmax_;
    } else {
      lo_.grad[0] += ds / levels_;
    }
  }
  std::vector<TrainableParam*> Params() override {
    if (uniform_) return {&lo_, &hi_};
    return {&lo_};
  }
  ActivationGridSpec Convert() const override {
    ActivationGridSpec out = spec_;
    if (uniform_) {
      out.range_min = lo_.value[0];
      out.range_max = hi_.value[0];
      FixRangeToIncludeZero(out.n_bits, &out.range_min, &out.range_max);
    } else {
      out.threshold = std::max(lo_.value[0], out.min_threshold);
      if (out.kind == WeightGridSpec::Kind::kPowerOfTwo) {
        out.threshold = SnapToPowerOfTwo(out.threshold, out.min_threshold);
      }
    }
    return out;
  }

 private:
  double Step() const {
    return uniform_ ? (hi_.value[0] - lo_.value[0]) / qmax_
                    : lo_.value[0] / levels_;
  }

  ActivationGridSpec spec_;
  bool uniform_ = false;
  double qmin_ = 0, qmax_ = 0, levels_ = 1, grad_scale_ = 1;
  TrainableParam lo_, hi_;
  std::vector<double> xs_, q_;
};

}  // namespace

QuantGrid ActivationGridOf(const ActivationGridSpec& spec) {
  if (spec.kind == WeightGridSpec::Kind::kUniform) {
    return UniformGrid({spec.range_min}, {spec.range_max}, spec.n_bits);
  }
  const double t = spec.kind == WeightGridSpec::Kind::kPowerOfTwo
                       ? SnapToPowerOfTwo(spec.threshold, spec.min_threshold)
                       : std::max(spec.threshold, spec.min_threshold);
  return SymmetricGrid({t}, spec.n_bits, spec.is_signed);
}

std::unique_ptr<TrainableActivationQuantizer> MakeSteActivationQuantizer(
    const ActivationGridSpec& spec) {
  return std::make_unique<SteActivationQuantizer>(spec);
}

std::unique_ptr<TrainableActivationQuantizer> MakeLsqActivationQuantizer(
    const ActivationGridSpec& spec, int64_t channels) {
  return std::make_unique<LsqActivationQuantizer>(spec, channels);
}

}  // namespace quantd::train
