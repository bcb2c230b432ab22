// Statistics corrections as pure tensor math (MCT's
// compute_bias_correction_of_graph, shift_negative_activation,
// compute_activation_bias_correction_of_graph); the pipeline applies the
// returned terms to the graph.
#ifndef QUANTD_CORE_QUANTIZERS_CORRECTIONS_H_
#define QUANTD_CORE_QUANTIZERS_CORRECTIONS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

// Weights bias correction. eps = sum over the spatial axes of (Wq - W), an
// [out, in] matrix; the term per output channel is c[o] = sum_i eps[o, i] *
// mean_in[i], with i running over the input channels of o's group. The new
// bias is b - c. `input_mean` holds one mean per input channel of the layer
// (C values); the kernel's in axis holds C/groups (Conv layout) or C
// (ConvTranspose layout, whose out axis then holds M/groups). Returns M
// terms.
absl::StatusOr<std::vector<double>> WeightsBiasCorrection(
    const TensorView& kernel, absl::Span<const float> quantized_kernel,
    int out_axis, int in_axis, absl::Span<const double> input_mean,
    int groups = 1);

// sum of the kernel over every axis but out_axis, per output channel: the
// factor that turns a constant input shift into a bias shift.
absl::StatusOr<std::vector<double>> KernelSumPerOutput(const TensorView& kernel,
                                                       int out_axis);

// Per-tensor activation quantizer parameters.
struct ActivationQuantParams {
  QuantizationMethod method = QuantizationMethod::kPowerOfTwo;
  int n_bits = 8;
  bool is_signed = false;
  double threshold = 1.0;  // PoT / symmetric
  double range_min = 0.0;  // uniform
  double range_max = 1.0;
};

// Fake-quantizes values with per-tensor activation parameters (LUT methods
// are not supported here).
absl::StatusOr<std::vector<double>> FakeQuantizeActivation(
    absl::Span<const double> values, const ActivationQuantParams& params);

// Activation bias correction: the mean shift the input quantization causes,
// dmu = sum((q(centers) - centers) * counts) / sum(counts) over the bin
// centers of the input histogram. nullopt when 100 * |dmu| / |mu| is below
// `threshold_percent` (mu the float mean); otherwise the bias term per output
// channel, dmu * KernelSumPerOutput (subtract it from the bias).
absl::StatusOr<std::optional<std::vector<double>>> ActivationBiasCorrectionTerm(
    const Histogram& input_histogram, const ActivationQuantParams& input_params,
    const TensorView& kernel, int out_axis, double threshold_percent = 0.0);

// Shift-negative correction of an activation whose minimum is negative.
struct ShiftNegativeParams {
  bool apply = false;    // min < 0 and |min| / T <= ratio
  double shift = 0;      // added to the activation
  double threshold = 0;  // the shifted (unsigned) activation's threshold
};

// shift = the smallest point of the unsigned grid linspace(0, T - T/2^n, 2^n)
// that is >= |min_value|. With `search_histogram` (MCT's
// shift_negative_params_search), T' in {T, 2T} and every grid shift are tried
// and the pair with the smallest histogram MSE of the shifted, unsigned
// quantized histogram wins.
absl::StatusOr<ShiftNegativeParams> ShiftNegativeCorrection(
    double min_value, double threshold, int n_bits, double ratio = 0.05,
    const Histogram* search_histogram = nullptr);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_CORRECTIONS_H_
