#include "core/train/weight_quantizers.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/train/for_each_element.h"

namespace quantd::train {
namespace {

double Clip(double x, double lo, double hi) {
  return std::min(std::max(x, lo), hi);
}

// The trained float weights of the QAT quantizers (STE, LSQ).
TrainableParam WeightsParam(std::vector<double> w) {
  TrainableParam p;
  p.name = "weights";
  p.group = VariableGroup::kWeights;
  p.value = std::move(w);
  p.ZeroGrad();
  return p;
}

}  // namespace

FixedWeights FixedWeightsOnGrid(const WeightGridSpec& spec, QuantGrid grid,
                                std::vector<int32_t> ints) {
  FixedWeights out;
  out.grid = std::move(grid);
  out.ints = std::move(ints);
  if (spec.kind == WeightGridSpec::Kind::kUniform) {
    out.range_min = spec.range_min;
    out.range_max = spec.range_max;
    for (size_t c = 0; c < out.range_min.size(); ++c) {
      FixRangeToIncludeZero(spec.n_bits, &out.range_min[c], &out.range_max[c]);
    }
  } else {
    for (double t : spec.thresholds) {
      out.thresholds.push_back(spec.kind == WeightGridSpec::Kind::kPowerOfTwo
                                   ? SnapToPowerOfTwo(t, spec.min_threshold)
                                   : t);
    }
  }
  return out;
}

namespace {

// Rounds float weights to the nearest point of `g` (clipped).
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

// A quantizer whose grid stays frozen (STE, soft rounding, GPTQ STE): what
// trains only moves each weight's grid level. Subclasses say what the level
// is in training mode (before clipping) and at conversion; forward
// (wq = scale * (clip(level) - z)) and conversion are shared.
class FrozenGridQuantizer : public TrainableWeightQuantizer {
 public:
  void Forward(std::vector<double>* wq) final {
    PrepareForward();
    wq->resize(size_);
    ForEachElement(pool_, size_, [&](size_t i) {
      (*wq)[i] = Dequantize(i, ClipToGrid(TrainingLevel(i)));
    });
  }
  FixedWeights Convert() const final {
    std::vector<int32_t> ints(size_);
    for (size_t i = 0; i < size_; ++i) {
      ints[i] = static_cast<int32_t>(ClipToGrid(HardLevel(i)));
    }
    return FixedWeightsOnGrid(spec_, grid_, std::move(ints));
  }

 protected:
  FrozenGridQuantizer(const WeightGridSpec& spec, QuantGrid grid, size_t size)
      : spec_(spec), grid_(std::move(grid)), size_(size) {}

  // What TrainingLevel reads that Forward computes once per call.
  virtual void PrepareForward() {}
  // Unclipped grid level of weight i in training mode / at conversion.
  virtual double TrainingLevel(size_t i) const = 0;
  virtual double HardLevel(size_t i) const { return TrainingLevel(i); }

  double Scale(size_t i) const { return grid_.scale[grid_.ChannelOf(i)]; }
  // w / scale + z: the real-valued grid position of a float weight.
  double GridPosition(size_t i, double w) const {
    const int64_t c = grid_.ChannelOf(i);
    return w / grid_.scale[c] + grid_.zero_point[c];
  }
  double Dequantize(size_t i, double q) const {
    const int64_t c = grid_.ChannelOf(i);
    return grid_.scale[c] * (q - grid_.zero_point[c]);
  }
  double ClipToGrid(double q) const { return Clip(q, grid_.qmin, grid_.qmax); }
  bool InGrid(double q) const { return q >= grid_.qmin && q <= grid_.qmax; }

 private:
  WeightGridSpec spec_;
  QuantGrid grid_;
  size_t size_;
};

class SteWeightQuantizer final : public FrozenGridQuantizer {
 public:
  SteWeightQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                     std::vector<double> w)
      : FrozenGridQuantizer(spec, std::move(grid), w.size()),
        w_(WeightsParam(std::move(w))) {}
  // ste_round and ste_clip: the gradient passes unchanged (MCT's QAT STE).
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) w_.grad[i] += dwq[i];
  }
  std::vector<TrainableParam*> Params() override { return {&w_}; }

 private:
  double TrainingLevel(size_t i) const override {
    return std::nearbyint(GridPosition(i, w_.value[i]));
  }

  TrainableParam w_;
};

class SoftRoundingQuantizer final : public FrozenGridQuantizer {
 public:
  SoftRoundingQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                        const std::vector<double>& w)
      : FrozenGridQuantizer(spec, std::move(grid), w.size()) {
    v_.name = "soft_rounding_v";
    v_.group = VariableGroup::kAux;
    floor_.resize(w.size());
    v_.value.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const double x = GridPosition(i, w[i]);
      floor_[i] = std::floor(x);
      // h(V) = fractional part r: V = -log((zeta - gamma) / (r - gamma) - 1).
      const double r = x - floor_[i];
      v_.value[i] = -std::log((kSoftZeta - kSoftGamma) / (r - kSoftGamma) - 1);
    }
    v_.ZeroGrad();
  }
  // ste_clip: the clip passes the gradient (MCT's soft quantizer). After
  // Forward, so sigmoid_ is that of the current V.
  void Backward(const std::vector<double>& dwq) override {
    if (sigmoid_.size() != v_.value.size()) PrepareForward();  // no Forward
    ForEachElement(pool_, dwq.size(), [&](size_t i) {
      v_.grad[i] += dwq[i] * Scale(i) * SoftRoundingDhOfSigmoid(sigmoid_[i]);
    });
  }
  std::vector<TrainableParam*> Params() override { return {&v_}; }
  const TrainableParam& v() const { return v_; }
  const std::vector<double>& sigmoid() const { return sigmoid_; }

 private:
  // One exp per weight and step, shared by h, its derivative and the
  // regularizer.
  void PrepareForward() override {
    sigmoid_.resize(v_.value.size());
    ForEachElement(pool_, sigmoid_.size(), [&](size_t i) {
      sigmoid_[i] = SoftRoundingSigmoid(v_.value[i]);
    });
  }
  double TrainingLevel(size_t i) const override {
    return floor_[i] + SoftRoundingHOfSigmoid(sigmoid_[i]);
  }
  // h(V) >= 0.5 exactly when V >= 0.
  double HardLevel(size_t i) const override {
    return floor_[i] + (v_.value[i] >= 0 ? 1 : 0);
  }

  std::vector<double> floor_;
  TrainableParam v_;
  std::vector<double> sigmoid_;  // of v_ at the last Forward
};

class GptqSteQuantizer final : public FrozenGridQuantizer {
 public:
  GptqSteQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                   const std::vector<double>& w)
      : FrozenGridQuantizer(spec, std::move(grid), w.size()) {
    u_.name = "ste_shift";
    u_.group = VariableGroup::kAux;
    base_.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      base_[i] = std::nearbyint(GridPosition(i, w[i]));
    }
    u_.value.assign(w.size(), 0.0);
    u_.ZeroGrad();
  }
  // ste_round passes the gradient; the clip stops it outside the grid.
  void Backward(const std::vector<double>& dwq) override {
    for (size_t i = 0; i < dwq.size(); ++i) {
      if (!InGrid(TrainingLevel(i))) continue;
      u_.grad[i] += dwq[i] * Scale(i);
    }
  }
  std::vector<TrainableParam*> Params() override { return {&u_}; }
  void AfterStep() override {
    for (double& u : u_.value) u = Clip(u, -1.0, 1.0);  // max_lsbs_change 1
  }

 private:
  double TrainingLevel(size_t i) const override {
    return std::nearbyint(base_[i] + u_.value[i]);
  }

  std::vector<double> base_;
  TrainableParam u_;
};

// LSQ trains the grid itself, so it keeps its own (learned) step and offset
// per channel and only shares the weights parameter and the conversion.
class LsqWeightQuantizer final : public TrainableWeightQuantizer {
 public:
  LsqWeightQuantizer(const WeightGridSpec& spec, QuantGrid grid,
                     std::vector<double> w)
      : spec_(spec),
        grid_(std::move(grid)),
        uniform_(spec.kind == WeightGridSpec::Kind::kUniform),
        w_(WeightsParam(std::move(w))) {
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

  // The learned thresholds (or ranges) give a new grid, with the same
  // channel layout; the trained weights are rounded to it.
  FixedWeights Convert() const override {
    WeightGridSpec learned = spec_;
    if (uniform_) {
      learned.range_min = lo_.value;
      learned.range_max = hi_.value;
    } else {
      learned.thresholds = lo_.value;
    }
    QuantGrid grid = GridOf(learned);
    grid.channels = grid_.channels;
    grid.inner = grid_.inner;
    std::vector<int32_t> ints = RoundToGrid(w_.value, grid);
    return FixedWeightsOnGrid(learned, std::move(grid), std::move(ints));
  }

 private:
  double Step(int64_t c) const {
    return uniform_ ? (hi_.value[c] - lo_.value[c]) / grid_.qmax
                    : lo_.value[c] / levels_;
  }
  double Offset(int64_t c) const { return uniform_ ? lo_.value[c] : 0.0; }

  WeightGridSpec spec_;
  QuantGrid grid_;
  bool uniform_;
  double levels_ = 1;
  double grad_scale_ = 1;
  TrainableParam w_, lo_, hi_;
  std::vector<double> x_, q_;
};

}  // namespace

double SoftRoundingSigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

double SoftRoundingHOfSigmoid(double s) {
  return Clip(s * (kSoftZeta - kSoftGamma) + kSoftGamma, 0.0, 1.0);
}

double SoftRoundingDhOfSigmoid(double s) {
  const double h = s * (kSoftZeta - kSoftGamma) + kSoftGamma;
  if (h <= 0.0 || h >= 1.0) return 0.0;
  return s * (1.0 - s) * (kSoftZeta - kSoftGamma);
}

double SoftRoundingH(double v) {
  return SoftRoundingHOfSigmoid(SoftRoundingSigmoid(v));
}

double SoftRoundingDh(double v) {
  return SoftRoundingDhOfSigmoid(SoftRoundingSigmoid(v));
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

const std::vector<double>* SoftRoundingSigmoids(
    const TrainableWeightQuantizer& quantizer) {
  const auto* soft = dynamic_cast<const SoftRoundingQuantizer*>(&quantizer);
  return soft == nullptr ? nullptr : &soft->sigmoid();
}

}  // namespace quantd::train
