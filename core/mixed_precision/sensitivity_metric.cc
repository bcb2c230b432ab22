#include "core/mixed_precision/sensitivity_metric.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/mixed_precision/internal/distance_sums.h"
#include "core/mixed_precision/sample_distance.h"

namespace quantd::mixed_precision {
namespace {

absl::Status CheckPair(absl::Span<const float> f, absl::Span<const float> q,
                       const char* what) {
  if (f.size() != q.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": float output has ", f.size(),
                     " elements, quantized output ", q.size()));
  }
  if (f.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty outputs"));
  }
  for (size_t n = 0; n < f.size(); ++n) {
    if (!std::isfinite(f[n]) || !std::isfinite(q[n])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": non-finite value at element ", n));
    }
  }
  return absl::OkStatus();
}

constexpr double kEps = internal::kDistanceEps;

}  // namespace

absl::StatusOr<double> NormalizedMse(absl::Span<const float> f,
                                     absl::Span<const float> q) {
  if (absl::Status s = CheckPair(f, q, "normalized MSE"); !s.ok()) return s;
  const double squared_error = internal::SquaredDiffSum(
      f.data(), q.data(), static_cast<int64_t>(f.size()));
  return internal::NormalizedMseFromSums(
      squared_error, SumFloatSide(f).squared_norm, f.size());
}

absl::StatusOr<double> KlDivergence(absl::Span<const float> f,
                                    absl::Span<const float> q) {
  if (absl::Status s = CheckPair(f, q, "KL divergence"); !s.ok()) return s;
  double sum = 0;
  for (size_t n = 0; n < f.size(); ++n) {
    const double p = std::max<double>(f[n], kEps);
    const double r = std::max<double>(q[n], kEps);
    sum += p * std::log(p / r);
  }
  return sum;
}

absl::StatusOr<double> CosineDistance(absl::Span<const float> f,
                                      absl::Span<const float> q) {
  if (absl::Status s = CheckPair(f, q, "cosine distance"); !s.ok()) return s;
  double dot = 0, norm_q = 0;
  internal::DotAndNormSums(f.data(), q.data(), static_cast<int64_t>(f.size()),
                           &dot, &norm_q);
  return internal::CosineDistanceFromSums(dot, SumFloatSide(f).squared_norm,
                                          norm_q);
}

std::vector<double> ApplyMetricEpsilon(absl::Span<const double> metric,
                                       int max_bit_candidate, double epsilon) {
  std::vector<double> out(metric.begin(), metric.end());
  if (max_bit_candidate < 0 ||
      static_cast<size_t>(max_bit_candidate) >= out.size()) {
    return out;
  }
  const double floor = metric[max_bit_candidate] + epsilon;
  for (size_t j = 0; j < out.size(); ++j) {
    if (static_cast<int>(j) != max_bit_candidate) {
      out[j] = std::max(out[j], floor);
    }
  }
  return out;
}

}  // namespace quantd::mixed_precision
