// Per-element Hessian scores of kernels for the HMSE weights search (MCT's
// calculate_quantization_params with QuantizationErrorMethod.HMSE):
// HessianMode.WEIGHTS, PER_ELEMENT granularity, one Hutchinson estimate per
// calibration sample (hutchinson.h, a batch of one, as MCT's data loader with
// batch_size=1) on the first NUM_QPARAM_HESSIAN_SAMPLES (16) samples, then
// MCT's normalisation in get_threshold_selection_tensor_error_function:
//   score = sqrt(mean over samples of the per-sample estimates).
// The HMSE error is then mean((score * (w - q(w)))^2) (error_functions.h).
//
// Samples run in rounds of kSamplesPerRound (a constant, not the thread
// count), in parallel within a round; each sample has its own fixed-seed
// random stream and the estimates are summed in sample order, so the scores
// are the same bytes whatever the thread count.
#ifndef QUANTD_CORE_HESSIAN_WEIGHTS_HESSIAN_H_
#define QUANTD_CORE_HESSIAN_WEIGHTS_HESSIAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/hessian/hessian_scores.h"
#include "core/hessian/hutchinson.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/stage_names.h"
#include "core/runtime/thread_pool.h"

namespace quantd::hessian {

constexpr int kHmseNumSamples = 16;  // MCT's NUM_QPARAM_HESSIAN_SAMPLES
constexpr int kSamplesPerRound = 4;

struct WeightsHessianOptions {
  int num_samples = kHmseNumSamples;  // the first ones; fewer if fewer given
  HutchinsonOptions hutchinson;       // granularity is forced per element
  ThreadPool* pool = nullptr;
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;     // reports after every round
  std::string stage = stage::kHessian;  // Progress::stage
};

// The scores of every kernel in `kernels` (float initializers of `model`)
// on `samples`. An op on the path from the kernels to the outputs without a
// backward pass is UNIMPLEMENTED naming the node (autodiff).
absl::StatusOr<HessianScores> ComputeHmseScores(
    const Model& model, const std::vector<std::string>& kernels,
    const std::vector<std::map<std::string, Tensor>>& samples,
    const WeightsHessianOptions& options);

// MCT's normalisation: sqrt(sum / n) per element, as float32.
std::vector<float> NormalizeHmseScores(const std::vector<double>& sum, int n);

// Peak bytes of ComputeHmseScores for kernels of `kernel_elements` weights
// in total, `activation_bytes_per_sample` (every activation of one sample)
// and `threads` samples running at once: each running sample's tape and
// gradients, every estimate of a round, the sum and the scores.
int64_t EstimateHmseMemoryBytes(int64_t kernel_elements,
                                int64_t activation_bytes_per_sample,
                                int threads);

}  // namespace quantd::hessian

#endif  // QUANTD_CORE_HESSIAN_WEIGHTS_HESSIAN_H_
