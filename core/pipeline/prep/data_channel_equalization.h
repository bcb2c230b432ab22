// Channel equalization from observed ranges (quantd's extension of MCT's
// activation_channel_equalization, which takes its scales from BatchNorm
// priors and only for Conv -> BN -> ReLU -> Conv). A per-tensor activation
// grid is set by the tensor's widest channel, so channels with a small range
// get few of its steps. Where a conv input X has a producer that can scale
// each of its channels exactly and every reader of X is a Conv|ConvTranspose
// that can take the inverse scale on its input channels, channel c is
// multiplied by
//   s[c] = min((max_k m[k] / m[c])^alpha, max_scale)   (1 where m[c] = 0)
// with m[c] the channel's largest |value| over the calibration samples: the
// float function is unchanged and the narrow channels use more of the grid.
// alpha trades the activation's error against the reader's weights (their
// input channel c is divided by s[c]; SmoothQuant's migration strength).
//
// Producers that scale exactly: a Conv (any group) or group-1
// ConvTranspose (its output channels' weights and bias), or Mul(Y, a) /
// Add(Mul(Y, a), b) with scalar constants a, b (PP-LCNet's learnable affine
// after the activation), which become per-channel constants [C, 1, ..., 1];
// reached directly or through Relu, LeakyRelu, the pools, Resize or zero
// Pad, which a positive per-channel scale passes through, when nothing else
// reads the tensors between.
#ifndef QUANTD_CORE_PIPELINE_PREP_DATA_CHANNEL_EQUALIZATION_H_
#define QUANTD_CORE_PIPELINE_PREP_DATA_CHANNEL_EQUALIZATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace quantd {

struct EqualizationSite {
  std::string tensor;    // the conv input whose channels are scaled
  int64_t channels = 0;  // axis 1
};

// The sites of the main graph (in node order). Every initializer a site
// rewrites is read by that site only.
std::vector<EqualizationSite> FindEqualizationSites(const Model& model);

// s[c] as above; alpha in (0, 1], max_scale >= 1. Non-finite or negative
// ranges give 1 for the channel.
std::vector<double> EqualizationScales(const std::vector<double>& channel_max,
                                       double alpha, double max_scale);

// Multiplies each site's channels by `scales[tensor]` (sites absent from
// `scales`, or whose scale count differs from the site's channels, are left
// alone). Returns how many sites changed.
absl::StatusOr<int> ApplyChannelEqualization(
    const std::map<std::string, std::vector<double>>& scales, Model* model);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_DATA_CHANNEL_EQUALIZATION_H_
