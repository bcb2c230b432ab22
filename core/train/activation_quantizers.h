// Trainable activation quantizers (MCT §5.2, per tensor):
//   STE  y = s * (clip(round(x/s + z)) - z); the gradient passes where x is
//        inside the grid's range and stops outside; the grid is frozen
//        (GPTQ's activation quantizers, MCT freeze_quant_params).
//   LSQ  the same forward with a trainable threshold (POWER_OF_TWO /
//        SYMMETRIC) or min/max (UNIFORM); step gradients are scaled by
//        1 / sqrt(qmax * channels).
// Converted back to a fixed grid with PoT thresholds re-snapped.
#ifndef QUANTD_CORE_TRAIN_ACTIVATION_QUANTIZERS_H_
#define QUANTD_CORE_TRAIN_ACTIVATION_QUANTIZERS_H_

#include <memory>
#include <vector>

#include "core/train/quant_grid.h"
#include "core/train/trainable_param.h"
#include "core/train/weight_quantizers.h"

namespace quantd::train {

struct ActivationGridSpec {
  WeightGridSpec::Kind kind = WeightGridSpec::Kind::kPowerOfTwo;
  int n_bits = 8;
  bool is_signed = false;               // POWER_OF_TWO / SYMMETRIC
  double threshold = 1;                 // POWER_OF_TWO / SYMMETRIC
  double range_min = 0, range_max = 1;  // UNIFORM
  double min_threshold = 1.0 / 65536;
};

// The fixed per-tensor grid of a spec (PoT threshold snapped).
QuantGrid ActivationGridOf(const ActivationGridSpec& spec);

class TrainableActivationQuantizer {
 public:
  virtual ~TrainableActivationQuantizer() = default;
  virtual void Forward(const std::vector<double>& x,
                       std::vector<double>* y) = 0;
  // dL/dx from dL/dy for the x of the last Forward; accumulates the
  // parameters' gradients.
  virtual void Backward(const std::vector<double>& dy,
                        std::vector<double>* dx) = 0;
  virtual std::vector<TrainableParam*> Params() = 0;
  virtual ActivationGridSpec Convert() const = 0;
};

std::unique_ptr<TrainableActivationQuantizer> MakeSteActivationQuantizer(
    const ActivationGridSpec& spec);
// `channels`: size of the channel dimension (gradient scale).
std::unique_ptr<TrainableActivationQuantizer> MakeLsqActivationQuantizer(
    const ActivationGridSpec& spec, int64_t channels);

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_ACTIVATION_QUANTIZERS_H_
