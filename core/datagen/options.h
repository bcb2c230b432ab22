// Options of data generation, with MCT 2.3's defaults
// (model_compression_toolkit/data_generation; see docs/data_generation.md
// for where quantd departs).
#ifndef QUANTD_CORE_DATAGEN_OPTIONS_H_
#define QUANTD_CORE_DATAGEN_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace quantd::datagen {

// Expected per-channel statistics of one tensor (channel axis 1), for models
// whose BatchNormalization was folded into the convolutions at export.
struct ChannelStats {
  std::vector<float> mean;
  std::vector<float> std;
};

struct DataGenOptions {
  int64_t count = 32;          // images to generate
  int64_t iterations = 500;    // MCT DEFAULT_N_ITER
  int64_t batch_size = 32;     // MCT DEFAULT_DATA_GEN_BS
  double learning_rate = 1.0;  // Adam (MCT's Keras default)
  // ReduceLROnPlateau: factor 0.5, patience iterations / 50, min 1e-4.
  double output_loss_multiplier = 1e-5;  // MCT's PyTorch default
  int64_t extra_pixels = 32;  // optimised images are this much larger
  bool smoothing = true;      // 3x3 Gaussian, sigma 1.25
  // Valid input range per channel (one value: every channel). Empty: the
  // torchvision-normalised [0, 1] range MCT uses for 3 channels, none else.
  std::vector<float> input_min, input_max;
  // Input shape [N?, C, H, W] for models whose input has dynamic dims; the
  // batch dim is ignored.
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  // Tensor name -> expected statistics; replaces the BatchNormalization
  // statistics when not empty.
  std::map<std::string, ChannelStats> statistics;
};

// The largest Adam rate accepted: MCT's default is 1; far larger rates
// overflow the images to Inf/NaN.
inline constexpr double kMaxLearningRate = 1000;

// Positive counts and sizes, consistent finite ranges and statistics, a
// finite learning rate in (0, kMaxLearningRate]; names the field.
absl::Status ValidateDataGenOptions(const DataGenOptions& options);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_OPTIONS_H_
