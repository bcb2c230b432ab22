// GPTQ's default rounding training in one pass over the weights, in float32
// (PyTorch's precision, so MCT's): soft rounding's V
// (q = floor(w/s + z) + h(V), h = clip(sigmoid(V) (zeta - gamma) + gamma, 0,
// 1), the clip passing the gradient), the rounding regularizer's gradient
// (rounding_regularizer.h) and Adam (adam.h), fused with the next step's
// fake-quant weights: the arithmetic of SoftRoundingQuantizer,
// AddRoundingRegularizationGradient and Adam, one exp and (with the
// regularizer) one log and exp per weight and step, in Eigen's packets.
// Buffers are padded to whole packets and split in chunks of whole packets,
// so every weight takes the same instructions on any pool: the same bits.
#ifndef QUANTD_CORE_TRAIN_SOFT_ROUNDING_ADAM_H_
#define QUANTD_CORE_TRAIN_SOFT_ROUNDING_ADAM_H_

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/quant_grid.h"
#include "core/train/weight_quantizers.h"

namespace quantd::train {

class SoftRoundingAdam {
 public:
  // `grid`: GridOf(spec) with the tensor's channel layout; `w` the float
  // weights, flattened; Adam with torch's defaults at `learning_rate`.
  SoftRoundingAdam(const WeightGridSpec& spec, QuantGrid grid,
                   const std::vector<double>& w, double learning_rate,
                   ThreadPool* pool = nullptr);

  int64_t size() const { return size_; }
  // Fake-quant weights of the current V, in the tensor's layout.
  const float* weights() const { return wq_.data(); }
  // dL/d(weights): the caller writes size() values before each Step.
  float* weight_gradient() { return grad_.data(); }
  // One step: V's gradient through h, plus factor * d reg / dV at `beta`
  // (off when either is not positive), Adam, then the new weights.
  void Step(double factor, double beta, ThreadPool* pool);
  // Hard rounding: h >= 0.5 exactly when V >= 0.
  FixedWeights Convert() const;
  const float* v() const { return v_.data(); }

 private:
  // Adam's step (when `adam`), then the weights of V.
  void Update(bool adam, double factor, double beta, ThreadPool* pool);

  using Buffer = std::vector<float, Eigen::aligned_allocator<float>>;

  WeightGridSpec spec_;
  QuantGrid grid_;
  int64_t size_ = 0;
  double lr_;
  int64_t t_ = 0;
  // Per weight (padded): grid floor, scale and zero point; V with its
  // sigmoid and Adam moments; the fake-quant weights and their gradient.
  Buffer floor_, scale_, zero_point_, v_, sigmoid_, m_, s_, wq_, grad_;
};

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_SOFT_ROUNDING_ADAM_H_
