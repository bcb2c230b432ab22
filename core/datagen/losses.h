// MCT's data-generation losses and their gradients.
//  BN alignment (L2_SQUARE, AVERAGE layer weighting): per aligned tensor,
//    w * (|mu - mu_bn|^2 / C + |sigma - sigma_bn|^2 / C), w = 1 / layers,
//    mu, sigma = sqrt(E[x^2] - mu^2 + 1e-6) over (batch, H, W) per channel;
//    d/dx = A_c + B_c x for every element of channel c.
//  Output (NEGATIVE_MIN_MAX_DIFF): mean over the batch of -(max - min) of
//    each flattened output.
#ifndef QUANTD_CORE_DATAGEN_LOSSES_H_
#define QUANTD_CORE_DATAGEN_LOSSES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/datagen/bn_targets.h"
#include "core/graph/tensor.h"

namespace quantd::datagen {

struct ChannelSums {
  std::vector<double> sum, sum_sq;
  int64_t per_channel = 0;  // elements summed per channel
};

// Adds one image's tensor [1, C, ...] (C must match target's channels).
absl::Status AddChannelSums(const BnTarget& target, const Tensor& t,
                            ChannelSums* sums);

struct BnGradient {
  double loss = 0;
  std::vector<float> a, b;  // d loss / dx = a[c] + b[c] * x
};
BnGradient BnAlignment(const BnTarget& target, const ChannelSums& sums,
                       double weight);

// seed = a[c] + b[c] * x per element of t [1, C, ...].
Tensor BnSeed(const BnGradient& g, const Tensor& t);

// One image's share of the output loss (scale = multiplier / batch) and its
// seed: -scale at the first maximum, +scale at the first minimum.
double OutputLossSeed(const Tensor& output, double scale, Tensor* seed);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_LOSSES_H_
