// Trainable weight quantizers (MCT §5.2), each with a training-mode forward,
// its backward pass and the conversion back to fixed integer weights:
//   SteWeightQuantizer     QAT STE: the float weights train; round and clip
//                          pass the gradient through; grid frozen.
//   LsqWeightQuantizer     QAT LSQ: weights and the step size train
//                          (POWER_OF_TWO / SYMMETRIC: per-channel threshold;
//                          UNIFORM: per-channel min and max), gradient of the
//                          step scaled by 1 / sqrt(qmax * #steps).
//   SoftRoundingQuantizer  GPTQ / AdaRound: q = floor(w/s + z) + h(V),
//                          h = clip(sigmoid(V) * (zeta - gamma) + gamma, 0, 1);
//                          V initialised so that h(V) is the fractional part;
//                          converted with h >= 0.5.
//   GptqSteQuantizer       GPTQ STE: q = round(round(w/s + z) + u), u in
//                          [-1, 1] LSB trains through the STE.
// STE, soft rounding and GPTQ STE keep the PTQ grid frozen and differ only in
// how a weight's grid level is formed (they share forward and conversion);
// LSQ learns the grid.
// The float weights are given at construction (flattened, with the grid's
// channel layout); Forward() writes the fake-quant weights.
#ifndef QUANTD_CORE_TRAIN_WEIGHT_QUANTIZERS_H_
#define QUANTD_CORE_TRAIN_WEIGHT_QUANTIZERS_H_

#include <memory>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/quant_grid.h"
#include "core/train/trainable_param.h"

namespace quantd::train {

// The fixed (inferable) result: integers on `grid` (value = scale * (q - z)).
struct FixedWeights {
  QuantGrid grid;
  std::vector<int32_t> ints;
  // The thresholds (POWER_OF_TWO / SYMMETRIC) or ranges (UNIFORM) the grid
  // came from, after training (PoT thresholds re-snapped).
  std::vector<double> thresholds, range_min, range_max;
};

class TrainableWeightQuantizer {
 public:
  virtual ~TrainableWeightQuantizer() = default;
  // Fake-quant weights in training mode.
  virtual void Forward(std::vector<double>* wq) = 0;
  // Accumulates the gradients of the parameters from dL/dwq, at the
  // parameters of the last Forward (which must come first, as in training).
  virtual void Backward(const std::vector<double>& dwq) = 0;
  virtual std::vector<TrainableParam*> Params() = 0;
  // Called after each optimizer step (projections such as the GPTQ STE
  // shift's [-1, 1] LSB bound).
  virtual void AfterStep() {}
  // Hard (inference) quantization of the current state.
  virtual FixedWeights Convert() const = 0;
  // Forward and Backward split their per-weight work over `pool` (null:
  // inline); every weight's arithmetic is its own, so results do not change.
  void set_pool(ThreadPool* pool) { pool_ = pool; }

 protected:
  ThreadPool* pool_ = nullptr;
};

// How the PTQ result describes the tensor's grid.
struct WeightGridSpec {
  enum class Kind { kPowerOfTwo, kSymmetric, kUniform } kind = Kind::kSymmetric;
  int n_bits = 8;
  std::vector<double> thresholds;            // kPowerOfTwo / kSymmetric
  std::vector<double> range_min, range_max;  // kUniform
  double min_threshold = 1.0 / 65536;
};

// The fixed grid of a spec (PoT thresholds snapped), without channel
// layout (see SetChannelLayout).
QuantGrid GridOf(const WeightGridSpec& spec);

// The fixed result: `ints` on `grid`, with the thresholds (or ranges) of
// `spec` the grid came from (PoT thresholds snapped, UNIFORM ranges fixed to
// include zero).
FixedWeights FixedWeightsOnGrid(const WeightGridSpec& spec, QuantGrid grid,
                                std::vector<int32_t> ints);

// Factories: `grid` is GridOf(spec) with the tensor's channel layout set; `w`
// the float weights, flattened.

std::unique_ptr<TrainableWeightQuantizer> MakeSteWeightQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w);
std::unique_ptr<TrainableWeightQuantizer> MakeLsqWeightQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w);
std::unique_ptr<TrainableWeightQuantizer> MakeSoftRoundingQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w);
std::unique_ptr<TrainableWeightQuantizer> MakeGptqSteQuantizer(
    const WeightGridSpec& spec, QuantGrid grid, std::vector<double> w);

// AdaRound's rectified sigmoid and its derivative (0 where clipped).
inline constexpr double kSoftGamma = -0.1, kSoftZeta = 1.1;
double SoftRoundingH(double v);
double SoftRoundingDh(double v);
// The same from s = SoftRoundingSigmoid(v), for callers that need both.
double SoftRoundingSigmoid(double v);
double SoftRoundingHOfSigmoid(double s);
double SoftRoundingDhOfSigmoid(double s);

// Soft-rounding quantizers expose their h(V) for the rounding regularizer;
// null for the other kinds.
const TrainableParam* SoftRoundingVariables(
    const TrainableWeightQuantizer& quantizer);
// ... and SoftRoundingSigmoid of each V as of their last Forward (V does not
// change between a Forward and the optimizer step); null for the other kinds.
const std::vector<double>* SoftRoundingSigmoids(
    const TrainableWeightQuantizer& quantizer);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_WEIGHT_QUANTIZERS_H_
