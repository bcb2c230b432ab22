// PTQ result <-> trainable quantizer configs (trainable_quantizer.proto, the
// mirrors of MCT's TrainableQuantizerWeightsConfig / ActivationConfig), the
// factories that build a trainable quantizer from a config, and the
// write-back of the trained fixed weights into the PTQ result.
#ifndef QUANTD_CORE_TRAIN_QUANTIZER_CONFIG_H_
#define QUANTD_CORE_TRAIN_QUANTIZER_CONFIG_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/qdq/quantization_params.h"
#include "core/runtime/thread_pool.h"
#include "core/train/activation_quantizers.h"
#include "core/train/soft_rounding_adam.h"
#include "core/train/weight_quantizers.h"
#include "quantd/v1/trainable_quantizer.pb.h"

namespace quantd::train {

// POWER_OF_TWO / SYMMETRIC / UNIFORM only (LUT weights are not trainable):
// INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::TrainableQuantizerWeightsConfig> WeightsConfigFromPtq(
    const WeightParams& w, v1::TrainingMethod method);
absl::StatusOr<v1::TrainableQuantizerActivationConfig> ActivationConfigFromPtq(
    const ActivationParams& a, v1::TrainingMethod method);

absl::StatusOr<WeightGridSpec> WeightSpecOf(
    const v1::TrainableQuantizerWeightsConfig& config);
absl::StatusOr<ActivationGridSpec> ActivationSpecOf(
    const v1::TrainableQuantizerActivationConfig& config);

// A quantizer of `config.training_method` for float weights `w` of `shape`.
absl::StatusOr<std::unique_ptr<TrainableWeightQuantizer>> MakeWeightQuantizer(
    const v1::TrainableQuantizerWeightsConfig& config,
    const std::vector<int64_t>& shape, std::vector<double> w);
// Soft rounding fused with its Adam and regularizer (soft_rounding_adam.h),
// whatever `config.training_method`.
absl::StatusOr<std::unique_ptr<SoftRoundingAdam>> MakeSoftRoundingAdam(
    const v1::TrainableQuantizerWeightsConfig& config,
    const std::vector<int64_t>& shape, const std::vector<double>& w,
    double learning_rate, ThreadPool* pool = nullptr);
// STE (also when freeze_quant_params) or LSQ; `channels` scales LSQ's
// gradient.
absl::StatusOr<std::unique_ptr<TrainableActivationQuantizer>>
MakeActivationQuantizer(const v1::TrainableQuantizerActivationConfig& config,
                        int64_t channels);

// Writes thresholds / ranges, scales, zero points and the integer values of
// `fixed` into `w` (its integer storage type kept).
absl::Status WriteFixedWeights(const FixedWeights& fixed, WeightParams* w);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_QUANTIZER_CONFIG_H_
