// Shared vocabulary of the quantization-parameter selection library: methods,
// error metrics, MCT's constants, tensor/histogram views and result types.
//
// The pipeline maps the TPC protos onto these enums; nothing here depends on
// protobuf. Every numeric constant is MCT 2.3.0's (constants.py).
#ifndef QUANTD_CORE_QUANTIZERS_TYPES_H_
#define QUANTD_CORE_QUANTIZERS_TYPES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace quantd {

class CancellationToken;
class ThreadPool;

namespace quantizers {

// Values equal MCT's QuantizationMethod (and the TPC proto enum).
enum class QuantizationMethod : int {
  kPowerOfTwo = 0,
  kLutPot = 1,
  kSymmetric = 2,
  kUniform = 3,
  kLutSym = 4,
};

// MCT's QuantizationErrorMethod. kHmse needs Hessian scores (GPTQ only).
enum class ErrorMethod : int { kNoClipping, kMse, kMae, kKl, kLp, kHmse };

const char* QuantizationMethodName(QuantizationMethod method);
const char* ErrorMethodName(ErrorMethod method);

inline constexpr double kMinThreshold = 1.0 / 65536.0;  // 2^-16
inline constexpr double kEps = 1e-8;
inline constexpr int kLutValuesBitwidth = 8;
inline constexpr int kHistogramBins = 2048;
inline constexpr double kDefaultLpValue = 2.0;
// Search constants (qparams_search.py).
inline constexpr int kSymmetricTensorNIter = 40;
inline constexpr int kSymmetricTensorPerChannelNIter = 15;
inline constexpr int kSymmetricHistogramNIter = 20;
inline constexpr int kSymmetricNIntervals = 30;
inline constexpr int kSymmetricTensorDecFreq = 5;
inline constexpr int kSymmetricTensorPerChannelDecFreq = 3;
inline constexpr int kSymmetricHistogramDecFreq = 4;
inline constexpr int kUniformTensorNIter = 30;
inline constexpr int kUniformTensorPerChannelNIter = 10;
inline constexpr int kUniformHistogramNIter = 30;
inline constexpr int kUniformTensorNSamples = 8;
inline constexpr int kUniformHistogramNSamples = 12;
inline constexpr double kDecFactorLow = 1.02;
inline constexpr double kDecFactorHigh = 0.98;
inline constexpr double kDefaultTol = 1e-11;
inline constexpr double kBottomFactor = 0.7;
inline constexpr double kUpperFactor = 1.2;
inline constexpr double kDecRangeBottom = 0.97;
inline constexpr double kDecRangeUpper = 1.03;

// A read-only float32 tensor (row-major), e.g. a weight kernel.
struct TensorView {
  absl::Span<const float> data;
  std::vector<int64_t> shape;
};

// A histogram as MCT keeps it: `edges` has one more entry than `counts`.
// `float32_edges` marks a single np.histogram of float32 data (edges are
// float32 values, arithmetic on them runs in float32); merged histograms from
// HistogramCollector have float64 edges.
struct Histogram {
  std::vector<double> edges;
  std::vector<double> counts;
  bool float32_edges = false;
};

// Options of a weights search (`*_selection_tensor`).
struct WeightsSearchOptions {
  ErrorMethod error_method = ErrorMethod::kMse;
  int n_bits = 8;
  bool per_channel = true;
  // nullopt with per_channel: every axis is tried, the best is returned.
  std::optional<int> channel_axis = 0;
  double p = kDefaultLpValue;  // LP norm
  int n_iter = 10;             // power-of-two candidates
  double min_threshold = kMinThreshold;
  // kHmse only: one score per tensor element (same layout as the tensor).
  absl::Span<const float> hessian_scores;
  // Optional: channels are searched in parallel (results do not depend on it).
  ThreadPool* pool = nullptr;
  // Optional: once cancelled, every error evaluation returns 0 at once, so
  // the search ends within microseconds with a meaningless result that the
  // caller must discard (it checks the token after the search).
  const CancellationToken* cancel = nullptr;
};

// Options of an activation search (`*_selection_histogram`).
struct HistogramSearchOptions {
  ErrorMethod error_method = ErrorMethod::kMse;
  int n_bits = 8;
  double p = kDefaultLpValue;
  int n_iter = 20;
  double min_threshold = kMinThreshold;
  bool constrained = true;
  // nullopt: resolved from the histogram (MCT's Signedness.AUTO).
  std::optional<bool> is_signed;
};

// Threshold per channel (size C) or per tensor (size 1).
struct ThresholdParams {
  std::vector<double> threshold;
  int channel_axis = 0;
};

struct RangeParams {
  std::vector<double> range_min;
  std::vector<double> range_max;
  int channel_axis = 0;
};

struct ActivationThreshold {
  double threshold = 0;
  bool is_signed = false;
};

struct ActivationRange {
  double range_min = 0;
  double range_max = 0;
  bool is_signed = false;
};

}  // namespace quantizers
}  // namespace quantd

#endif  // QUANTD_CORE_QUANTIZERS_TYPES_H_
