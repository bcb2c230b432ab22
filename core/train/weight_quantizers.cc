#include "core/train/weight_quantizers.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace quantd::train {
namespace {

double Clip(double x, double lo, double hi) {
  return std::min(std::max(x, lo), hi);
}

std::vector<int32_t> RoundToGrid(const std::vector<double>& w,
                                 const QuantGrid& g) {
  std::vector<int32_t> ints(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t c = g.ChannelOf(i);
    ints[i] = static_cast<int32_t>(Clip(
        std::nearbyint(w[i] / g.scale[c] + g.zero_point[c]), g.qmin, g.qmax));
  }
  return ints;
}

// Thresholds (or ranges) of the fixed result for a frozen grid.
void CopySpec(const WeightGridSpec& spec, FixedWeights* out) {
  if (spec.kind == WeightGridSpec::Kind::kUniform) {
    out->range_min = spec.range_min;
    out->range_max = spec.range_max;
    for (size_t c = 0; c < out->range_min.size(); ++c) {
      FixRangeToIncludeZero(spec.n_bits, &out->range_min[c],
                            &out->range_max[c]);
    }
  } else {
    for (double t : spec.thresholds) {
      out->thresholds.push_back(spec.kind == WeightGridSpec::Kind::kPowerOfTwo
                                    ? SnapToPowerOfTwo(t, spec.min_threshold)
                                    : t);
    }
  }
}

class SteWeightQuantizer final : public TrainableWeightQuantizer {
 public:
  SteWeightQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                     std::vector<double> w)
      : spec_(spec), grid_(std::move(grid)) {
    w_.name = "weights";
    w_.group = VariableGroup::kWeights;
    w_.value = std::move(w);
    w_.ZeroGrad();
  }
  void Forward(std::vector<double>* wq) override {
    wq->resize(w_.value.size());
    for (size_t i = 0; i < w_.value.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double s = grid_.scale[c], z = grid_.zero_point[c];
      const double q =
          Clip(std::nearbyint(w_.value[i] / s + z), grid_.qmin, grid_.qmax);
      (*wq)[i] = s * (q - z);
    }
  }
  // ste_round and ste_clip: the gradient passes unchanged (MCT's QAT STE).
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) w_.grad[i] += dwq[i];
  }
  std::vector<TrainableParam*> Params() override { return {&w_}; }
  FixedWeights Convert() const override {
    FixedWeights out;
    out.grid = grid_;
    out.ints = RoundToGrid(w_.value, grid_);
    CopySpec(spec_, &out);
    return out;
  }

 private:
  WeightGridSpec spec_;
  QuantGrid grid_;
  TrainableParam w_;
};

class LsqWeightQuantizer final : public TrainableWeightQuantizer {
 public:
  LsqWeightQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                     std::vector<double> w)
      : spec_(spec), grid_(std::move(grid)) {
    w_.name = "weights";
    w_.group = VariableGroup::kWeights;
    w_.value = std::move(w);
    w_.ZeroGrad();
    uniform_ = spec.kind == WeightGridSpec::Kind::kUniform;
    const size_t c = grid_.scale.size();
    if (uniform_) {
      lo_.name = "range_min";
      hi_.name = "range_max";
      for (size_t k = 0; k < c; ++k) {
        lo_.value.push_back(-grid_.zero_point[k] * grid_.scale[k]);
        hi_.value.push_back(lo_.value.back() + grid_.qmax * grid_.scale[k]);
      }
      lo_.group = hi_.group = VariableGroup::kQparams;
      lo_.ZeroGrad();
      hi_.ZeroGrad();
    } else {
      levels_ = -grid_.qmin;  // 2^(n-1)
      lo_.name = "threshold";
      lo_.group = VariableGroup::kQparams;
      for (size_t k = 0; k < c; ++k) {
        lo_.value.push_back(grid_.scale[k] * levels_);
      }
      lo_.ZeroGrad();
    }
    grad_scale_ = 1.0 / std::sqrt(grid_.qmax * static_cast<double>(c));
  }

  void Forward(std::vector<double>* wq) override {
    wq->resize(w_.value.size());
    x_.resize(w_.value.size());
    q_.resize(w_.value.size());
    for (size_t i = 0; i < w_.value.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double s = Step(c), a = Offset(c);
      x_[i] = (w_.value[i] - a) / s;
      q_[i] = Clip(std::nearbyint(x_[i]), grid_.qmin, grid_.qmax);
      (*wq)[i] = s * q_[i] + a;
    }
  }

  // wq = s * clip(ste_round(x)) + a with x = (w - a) / s: inside the range
  // dwq/dw = 1, dwq/ds = round(x) - x, dwq/da = 0; outside dwq/dw = 0,
  // dwq/ds = q, dwq/da = 1. Step gradients are scaled by grad_scale_.
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double r = std::nearbyint(x_[i]);
      const bool in = r >= grid_.qmin && r <= grid_.qmax;
      const double g = dwq[i];
      w_.grad[i] += in ? g : 0.0;
      const double ds = g * (q_[i] - (in ? x_[i] : 0.0)) * grad_scale_;
      if (uniform_) {
        const double da = (in ? 0.0 : g) * grad_scale_;
        lo_.grad[c] += da - ds / grid_.qmax;
        hi_.grad[c] += ds / grid_.qmax;
      } else {
        lo_.grad[c] += ds / levels_;
      }
    }
  }

  std::vector<TrainableParam*> Params() override {
    if (uniform_) return {&w_, &lo_, &hi_};
    return {&w_, &lo_};
  }

  void AfterStep() override {
    if (uniform_) {
      for (size_t c = 0; c < lo_.value.size(); ++c) {
        if (hi_.value[c] <= lo_.value[c]) {
          hi_.value[c] = lo_.value[c] + grid_.qmax * spec_.min_threshold;
        }
      }
    } else {
      for (double& t : lo_.value) t = std::max(t, spec_.min_threshold);
    }
  }

  FixedWeights Convert() const override {
    WeightGridSpec learned = spec_;
    if (uniform_) {
      learned.range_min = lo_.value;
      learned.range_max = hi_.value;
    } else {
      learned.thresholds = lo_.value;
    }
    FixedWeights out;
    out.grid = GridOf(learned);
    out.grid.channels = grid_.channels;
    out.grid.inner = grid_.inner;
    out.ints = RoundToGrid(w_.value, out.grid);
    CopySpec(learned, &out);
    return out;
  }

 private:
  double Step(int64_t c) const {
    return uniform_ ? (hi_.value[c] - lo_.value[c]) / grid_.qmax
                    : lo_.value[c] / levels_;
  }
  double Offset(int64_t c) const { return uniform_ ? lo_.value[c] : 0.0; }

  WeightGridSpec spec_;
  QuantGrid grid_;
  bool uniform_ = false;
  double levels_ = 1;
  double grad_scale_ = 1;
  TrainableParam w_, lo_, hi_;
  std::vector<double> x_, q_;
};

class SoftRoundingQuantizer final : public TrainableWeightQuantizer {
 public:
  SoftRoundingQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                        std::vector<double> w)
      : spec_(spec), grid_(std::move(grid)), w_(std::move(w)) {
    v_.name = "soft_rounding_v";
    v_.group = VariableGroup::kAux;
    floor_.resize(w_.size());
    v_.value.resize(w_.size());
    for (size_t i = 0; i < w_.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double x = w_[i] / grid_.scale[c] + grid_.zero_point[c];
      floor_[i] = std::floor(x);
      // h(V) = fractional part r: V = -log((zeta - gamma) / (r - gamma) - 1).
      const double r = x - floor_[i];
      v_.value[i] = -std::log((kSoftZeta - kSoftGamma) / (r - kSoftGamma) - 1);
    }
    v_.ZeroGrad();
  }
  void Forward(std::vector<double>* wq) override {
    wq->resize(w_.size());
    for (size_t i = 0; i < w_.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double q =
          Clip(floor_[i] + SoftRoundingH(v_.value[i]), grid_.qmin, grid_.qmax);
      (*wq)[i] = grid_.scale[c] * (q - grid_.zero_point[c]);
    }
  }
  // ste_clip: the clip passes the gradient (MCT's soft quantizer).
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) {
      v_.grad[i] += dwq[i] * grid_.scale[grid_.ChannelOf(i)] *
                    SoftRoundingDh(v_.value[i]);
    }
  }
  std::vector<TrainableParam*> Params() override { return {&v_}; }
  FixedWeights Convert() const override {
    FixedWeights out;
    out.grid = grid_;
    out.ints.resize(w_.size());
    for (size_t i = 0; i < w_.size(); ++i) {
      // h(V) >= 0.5 exactly when V >= 0.
      out.ints[i] = static_cast<int32_t>(
          Clip(floor_[i] + (v_.value[i] >= 0 ? 1 : 0), grid_.qmin, grid_.qmax));
    }
    CopySpec(spec_, &out);
    return out;
  }
  const TrainableParam& v() const { return v_; }

 private:
  WeightGridSpec spec_;
  QuantGrid grid_;
  std::vector<double> w_, floor_;
  TrainableParam v_;
};

class GptqSteQuantizer final : public TrainableWeightQuantizer {
 public:
  GptqSteQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                   std::vector<double> w)
      : spec_(spec), grid_(std::move(grid)) {
    u_.name = "ste_shift";
    u_.group = VariableGroup::kAux;
    base_.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      base_[i] = std::nearbyint(w[i] / grid_.scale[c] + grid_.zero_point[c]);
    }
    u_.value.assign(w.size(), 0.0);
    u_.ZeroGrad();
  }
  void Forward(std::vector<double>* wq) override {
    wq->resize(base_.size());
    for (size_t i = 0; i < base_.size(); ++i) {
      const int64_t c = grid_.ChannelOf(i);
      const double q =
          Clip(std::nearbyint(base_[i] + u_.value[i]), grid_.qmin, grid_.qmax);
      (*wq)[i] = grid_.scale[c] * (q - grid_.zero_point[c]);
    }
  }
  // ste_round passes the gradient; the clip stops it outside the grid.
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) {
      const double r = std::nearbyint(base_[i] + u_.value[i]);
      if (r < grid_.qmin || r > grid_.qmax) continue;
      u_.grad[i] += dwq[i] * grid_.scale[grid_.ChannelOf(i)];
    }
  }
  std::vector<TrainableParam*> Params() override { return {&u_}; }
  void AfterStep() override {
    for (double& u : u_.value) u = Clip(u, -1.0, 1.0);  // max_lsbs_change 1
  }
  FixedWeights Convert() const override {
    FixedWeights out;
    out.grid = grid_;
    out.ints.resize(base_.size());
    for (size_t i = 0; i < base_.size(); ++i) {
      out.ints[i] = static_cast<int32_t>(
          Clip(std::nearbyint(base_[i] + u_.value[i]), grid_.qmin, grid_.qmax));
    }
    CopySpec(spec_, &out);
    return out;
  }

 private:
  WeightGridSpec spec_;
  QuantGrid grid_;
  std::vector<double> base_;
  TrainableParam u_;
};

}  // namespace

double SoftRoundingH(double v) {
  const double s = 1.0 / (1.0 + std::exp(-v));
  return Clip(s * (kSoftZeta - kSoftGamma) + kSoftGamma, 0.0, 1.0);
}

double SoftRoundingDh(double v) {
  const double s = 1.0 / (1.0 + std::exp(-v));
  const double h = s * (kSoftZeta - kSoftGamma) + kSoftGamma;
  if (h <= 0.0 || h >= 1.0) return 0.0;
  return s * (1.0 - s) * (kSoftZeta - kSoftGamma);
}

QuantGrid GridOf(const WeightGridSpec& spec) {
  if (spec.kind == WeightGridSpec::Kind::kUniform) {
    return UniformGrid(spec.range_min, spec.range_max, spec.n_bits);
  }
  std::vector<double> t;
  for (double v : spec.thresholds) {
    t.push_back(spec.kind == WeightGridSpec::Kind::kPowerOfTwo
                    ? SnapToPowerOfTwo(v, spec.min_threshold)
                    : std::max(v, spec.min_threshold));
  }
  return SymmetricGrid(t, spec.n_bits, /*is_signed=*/true);
}

std::unique_ptr<TrainableWeightQuantizer> MakeSteWeightQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w) {
  return std::make_unique<SteWeightQuantizer>(spec, std::move(grid),
                                              std::move(w));
}
std::unique_ptr<TrainableWeightQuantizer> MakeLsqWeightQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w) {
  return std::make_unique<LsqWeightQuantizer>(spec, std::move(grid),
                                              std::move(w));
}
std::unique_ptr<TrainableWeightQuantizer> MakeSoftRoundingQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w) {
  return std::make_unique<SoftRoundingQuantizer>(spec, std::move(grid),
                                                 std::move(w));
}
std::unique_ptr<TrainableWeightQuantizer> MakeGptqSteQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w) {
  return std::make_unique<GptqSteQuantizer>(spec, std::move(grid),
                                            std::move(w));
}

const TrainableParam* SoftRoundingVariables(
    const TrainableWeightQuantizer& quantizer) {
  const auto* soft = dynamic_cast<const SoftRoundingQuantizer*>(&quantizer);
  return soft == nullptr ? nullptr : &soft->v();
}

}  // namespace quantd::train
