// MCT's activation channel equalization (QuantizationConfig
// .activation_channel_equalization, scale_equalization.py): for
//   Conv|ConvTranspose -> BatchNormalization -> Relu [-> Pad 0] ->
//   Conv|ConvTranspose
// each channel c of the ReLU output is scaled by s[c] = min(1 / std[c], 1),
// where std[c] is the standard deviation after the ReLU of a Gaussian with
// the BatchNorm's prior (mean beta[c], std |gamma[c]|), and the second
// layer's input channel c is divided by s[c]. ReLU and zero padding commute
// with a positive scale, so the model computes the same function; channels
// that dominated the tensor's range shrink toward unit std, which narrows
// the per-tensor activation grid.
#ifndef QUANTD_CORE_PIPELINE_PREP_CHANNEL_EQUALIZATION_H_
#define QUANTD_CORE_PIPELINE_PREP_CHANNEL_EQUALIZATION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace quantd {

// Standard deviation of max(0, X) for X ~ N(mu, sigma^2) (rectified
// Gaussian; MCT's fixed_mean / fixed_second_moment_after_relu).
double RectifiedGaussianStd(double mu, double sigma);

// Applies the equalization to every match whose BatchNorm, ReLU and
// weights have no other use; must run before BatchNorm folding (the BN is
// MCT's "prior info"). Returns the number of layer pairs equalized.
absl::StatusOr<int> EqualizeActivationChannels(Model* model);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_CHANNEL_EQUALIZATION_H_
