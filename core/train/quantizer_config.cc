#include "core/train/quantizer_config.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/graph/tensor.h"

namespace quantd::train {
namespace {

constexpr double kMinThreshold = 1.0 / 65536;  // MCT MIN_THRESHOLD

absl::StatusOr<WeightGridSpec::Kind> KindOf(v1::QuantizationMethod m) {
  switch (m) {
    case v1::QUANTIZATION_METHOD_POWER_OF_TWO:
      return WeightGridSpec::Kind::kPowerOfTwo;
    case v1::QUANTIZATION_METHOD_SYMMETRIC:
      return WeightGridSpec::Kind::kSymmetric;
    case v1::QUANTIZATION_METHOD_UNIFORM:
      return WeightGridSpec::Kind::kUniform;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("quantization method ", v1::QuantizationMethod_Name(m),
                       " has no trainable quantizer"));
  }
}

}  // namespace

absl::StatusOr<v1::TrainableQuantizerWeightsConfig> WeightsConfigFromPtq(
    const WeightParams& w, v1::TrainingMethod method) {
  auto kind = KindOf(w.method);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight '", w.tensor, "': ", kind.status().message()));
  }
  v1::TrainableQuantizerWeightsConfig c;
  c.set_weights_quantization_method(w.method);
  c.set_weights_n_bits(w.n_bits);
  c.mutable_thresholds()->Assign(w.thresholds.begin(), w.thresholds.end());
  c.mutable_range_min()->Assign(w.range_min.begin(), w.range_min.end());
  c.mutable_range_max()->Assign(w.range_max.begin(), w.range_max.end());
  c.set_enable_weights_quantization(true);
  c.set_weights_channels_axis(w.per_channel ? w.channel_axis : -1);
  c.set_weights_per_channel_threshold(w.per_channel);
  c.set_min_threshold(kMinThreshold);
  c.set_training_method(method);
  return c;
}

absl::StatusOr<v1::TrainableQuantizerActivationConfig> ActivationConfigFromPtq(
    const ActivationParams& a, v1::TrainingMethod method) {
  auto kind = KindOf(a.method);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("activation '", a.tensor, "': ", kind.status().message()));
  }
  v1::TrainableQuantizerActivationConfig c;
  c.set_activation_quantization_method(a.method);
  c.set_activation_n_bits(a.n_bits);
  c.set_threshold(a.threshold);
  c.set_range_min(a.range_min);
  c.set_range_max(a.range_max);
  c.set_is_signed(a.is_signed);
  c.set_enable_activation_quantization(true);
  c.set_min_threshold(kMinThreshold);
  c.set_training_method(method);
  c.set_freeze_quant_params(method != v1::TRAINING_METHOD_LSQ);
  return c;
}

absl::StatusOr<WeightGridSpec> WeightSpecOf(
    const v1::TrainableQuantizerWeightsConfig& c) {
  WeightGridSpec s;
  auto kind = KindOf(c.weights_quantization_method());
  if (!kind.ok()) return kind.status();
  s.kind = *kind;
  s.n_bits = c.weights_n_bits();
  if (s.n_bits < 2 || s.n_bits > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights_n_bits: ", s.n_bits, " (2..16)"));
  }
  s.thresholds.assign(c.thresholds().begin(), c.thresholds().end());
  s.range_min.assign(c.range_min().begin(), c.range_min().end());
  s.range_max.assign(c.range_max().begin(), c.range_max().end());
  s.min_threshold = c.min_threshold() > 0 ? c.min_threshold() : kMinThreshold;
  const size_t n = s.kind == WeightGridSpec::Kind::kUniform
                       ? s.range_min.size()
                       : s.thresholds.size();
  if (n == 0 ||
      (s.kind == WeightGridSpec::Kind::kUniform && s.range_max.size() != n)) {
    return absl::InvalidArgumentError(
        "weights config: no thresholds / ranges (or min and max counts "
        "differ)");
  }
  for (double t : s.thresholds) {
    if (!(t > 0) || !std::isfinite(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights config: threshold ", t, " not positive"));
    }
  }
  return s;
}

absl::StatusOr<ActivationGridSpec> ActivationSpecOf(
    const v1::TrainableQuantizerActivationConfig& c) {
  auto kind = KindOf(c.activation_quantization_method());
  if (!kind.ok()) return kind.status();
  ActivationGridSpec s;
  s.kind = *kind;
  s.n_bits = c.activation_n_bits();
  if (s.n_bits < 2 || s.n_bits > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("activation_n_bits: ", s.n_bits, " (2..16)"));
  }
  s.is_signed = c.is_signed();
  s.threshold = c.threshold();
  s.range_min = c.range_min();
  s.range_max = c.range_max();
  s.min_threshold = c.min_threshold() > 0 ? c.min_threshold() : kMinThreshold;
  if (s.kind != WeightGridSpec::Kind::kUniform &&
      (!(s.threshold > 0) || !std::isfinite(s.threshold))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation config: threshold ", s.threshold, " not positive"));
  }
  return s;
}

namespace {

// The spec of `config` and its grid with the channel layout of `shape`.
absl::Status SpecAndGrid(const v1::TrainableQuantizerWeightsConfig& config,
                         const std::vector<int64_t>& shape, size_t weights,
                         WeightGridSpec* spec, QuantGrid* grid) {
  auto s = WeightSpecOf(config);
  if (!s.ok()) return s.status();
  if (static_cast<int64_t>(weights) != NumElements(shape)) {
    return absl::InvalidArgumentError("weights do not match their shape");
  }
  *spec = *std::move(s);
  *grid = GridOf(*spec);
  return SetChannelLayout(shape,
                          config.weights_per_channel_threshold()
                              ? config.weights_channels_axis()
                              : -1,
                          grid);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SoftRoundingAdam>> MakeSoftRoundingAdam(
    const v1::TrainableQuantizerWeightsConfig& config,
    const std::vector<int64_t>& shape, const std::vector<double>& w,
    double learning_rate, ThreadPool* pool) {
  WeightGridSpec spec;
  QuantGrid grid;
  if (auto st = SpecAndGrid(config, shape, w.size(), &spec, &grid); !st.ok()) {
    return st;
  }
  return std::make_unique<SoftRoundingAdam>(spec, std::move(grid), w,
                                            learning_rate, pool);
}

absl::StatusOr<std::unique_ptr<TrainableWeightQuantizer>> MakeWeightQuantizer(
    const v1::TrainableQuantizerWeightsConfig& config,
    const std::vector<int64_t>& shape, std::vector<double> w) {
  WeightGridSpec spec;
  QuantGrid grid;
  if (auto st = SpecAndGrid(config, shape, w.size(), &spec, &grid); !st.ok()) {
    return st;
  }
  switch (config.training_method()) {
    case v1::TRAINING_METHOD_UNSPECIFIED:
    case v1::TRAINING_METHOD_STE:
      return MakeSteWeightQuantizer(spec, std::move(grid), std::move(w));
    case v1::TRAINING_METHOD_LSQ:
      return MakeLsqWeightQuantizer(spec, std::move(grid), std::move(w));
    case v1::TRAINING_METHOD_SOFT_ROUNDING:
      return MakeSoftRoundingQuantizer(spec, std::move(grid), std::move(w));
    case v1::TRAINING_METHOD_GPTQ_STE:
      return MakeGptqSteQuantizer(spec, std::move(grid), std::move(w));
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "training_method ", config.training_method(), " unknown"));
  }
}

absl::StatusOr<std::unique_ptr<TrainableActivationQuantizer>>
MakeActivationQuantizer(const v1::TrainableQuantizerActivationConfig& config,
                        int64_t channels) {
  auto spec = ActivationSpecOf(config);
  if (!spec.ok()) return spec.status();
  switch (config.training_method()) {
    case v1::TRAINING_METHOD_UNSPECIFIED:
    case v1::TRAINING_METHOD_STE:
      return MakeSteActivationQuantizer(*spec);
    case v1::TRAINING_METHOD_LSQ:
      if (config.freeze_quant_params())
        return MakeSteActivationQuantizer(*spec);
      return MakeLsqActivationQuantizer(*spec, channels);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("activation training_method ",
                       v1::TrainingMethod_Name(config.training_method()),
                       " is for weights only"));
  }
}

absl::Status WriteFixedWeights(const FixedWeights& fixed, WeightParams* w) {
  if (w->int_values.dtype() != DType::kInt32 ||
      static_cast<size_t>(w->int_values.num_elements()) != fixed.ints.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight '", w->tensor,
                     "': trained integers do not match the stored values"));
  }
  std::memcpy(w->int_values.mutable_data<int32_t>(), fixed.ints.data(),
              fixed.ints.size() * sizeof(int32_t));
  w->thresholds = fixed.thresholds;
  w->range_min = fixed.range_min;
  w->range_max = fixed.range_max;
  w->scales = fixed.grid.scale;
  w->zero_points.clear();
  for (double z : fixed.grid.zero_point) {
    w->zero_points.push_back(static_cast<int64_t>(z));
  }
  return absl::OkStatus();
}

}  // namespace quantd::train
