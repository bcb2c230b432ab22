// GptqConfig (job.proto) resolved to the values the GPTQ stage runs with:
// MCT's defaults for unset fields (get_pytorch_gptq_config: 5 epochs, Adam
// lr 3e-2 for the rounding variables, 1e-4 for biases, bias training on,
// soft rounding, regularization 0.01 without sample-layer attention,
// gradual activation quantization on). Options quantd cannot honour are
// UNIMPLEMENTED, bad values INVALID_ARGUMENT naming the field.
#ifndef QUANTD_CORE_PIPELINE_GPTQ_GPTQ_OPTIONS_H_
#define QUANTD_CORE_PIPELINE_GPTQ_GPTQ_OPTIONS_H_

#include "absl/status/statusor.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/trainable_quantizer.pb.h"

namespace quantd {

struct GptqOptions {
  int n_epochs = 5;
  double lr_rounding = 3e-2;
  double lr_rest = 1e-4;  // thresholds: frozen in quantd's GPTQ (as MCT's)
  double lr_bias = 1e-4;
  v1::TrainingMethod rounding = v1::TRAINING_METHOD_SOFT_ROUNDING;
  bool train_bias = true;
  double regularization_factor = 0.01;
  bool gradual_activation_quantization = true;
  int max_samples = 0;        // 0 = all calibration samples
  int rows_per_block = 4096;  // sampled output positions per block
  int batch_rows = 128;       // output positions per gradient step
};

// The quality target's GPTQ trial trains this many epochs where the request
// leaves gptq.n_epochs unset: the steps are a small part of the stage (the
// blocks' inputs are most of it), and ppocr_det's held-out IoU needs them
// (docs/quality_target.md, the GPTQ trial).
inline constexpr int kTargetGptqEpochs = 10;

absl::StatusOr<GptqOptions> ResolveGptqOptions(const v1::GptqConfig& config);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_GPTQ_GPTQ_OPTIONS_H_
