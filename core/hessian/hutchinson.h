// Hutchinson estimates of the Hessian of the model output with respect to
// kernels, for one sample (MCT's WeightsHessianScoresCalculator with a batch
// of one, HessianMode.WEIGHTS):
//   for j in [0, max_iterations):  v ~ Rademacher over every float output,
//     f_v = sum(v . output) / batch,  g = d(f_v) / d(W) for every kernel W,
//     h_j = g^2 (per element) or its sum over the non-output-channel axes,
//     running mean of h_j; after iteration min_iterations stop once every
//     kernel's mean (over its elements or channels) changed by less than
//     `tolerance` relative (MCT's HESSIAN_COMP_TOLERANCE).
// E[g^2] over v is the diagonal of J^T J (J: d output / d W), MCT's
// label-free approximation of the Hessian's diagonal. One backward pass gives
// every kernel's gradient; the random stream is fixed by `seed`.
#ifndef QUANTD_CORE_HESSIAN_HUTCHINSON_H_
#define QUANTD_CORE_HESSIAN_HUTCHINSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/autodiff/gradient_graph.h"
#include "core/graph/tensor.h"
#include "core/runtime/cancellation.h"

namespace quantd::hessian {

// MCT's constants (model_compression_toolkit/constants.py).
constexpr int kHessianNumIterations = 100;  // HESSIAN_NUM_ITERATIONS
constexpr int kMinHessianIterations = 10;   // MIN_HESSIAN_ITER
constexpr double kHessianTolerance = 1e-3;  // HESSIAN_COMP_TOLERANCE

enum class Granularity {
  kPerElement,        // one score per weight (HMSE)
  kPerOutputChannel,  // one per output channel (pruning's LFH)
};

struct KernelTarget {
  std::string initializer;
  int output_channel_axis = 0;  // kPerOutputChannel only
};

struct HutchinsonOptions {
  Granularity granularity = Granularity::kPerElement;
  int max_iterations = kHessianNumIterations;
  int min_iterations = kMinHessianIterations;
  double tolerance = kHessianTolerance;
};

// The float graph outputs that depend on the requested initializers (the
// outputs f_v sums over). FAILED_PRECONDITION when there are none.
absl::StatusOr<std::vector<std::string>> HessianOutputs(
    const autodiff::GradientGraph& graph, const autodiff::Tape& tape);

// One sample's estimates, per target in order: as many values as the kernel
// has elements (kPerElement) or output channels. `graph` must have been
// created with every target's initializer. Cancellation is polled at every
// iteration (and inside the forward and backward passes). `iterations`
// (optional) receives the number of backward passes run.
absl::StatusOr<std::vector<std::vector<double>>> EstimateForSample(
    const autodiff::GradientGraph& graph,
    const std::map<std::string, Tensor>& feeds,
    const std::vector<KernelTarget>& targets, const HutchinsonOptions& options,
    uint64_t seed, const CancellationToken* cancel = nullptr,
    int* iterations = nullptr);

}  // namespace quantd::hessian

#endif  // QUANTD_CORE_HESSIAN_HUTCHINSON_H_
