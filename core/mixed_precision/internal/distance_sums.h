// The sums of the distances of sensitivity_metric.h and their last step:
// shared by the one-sample functions and sample_distance.h, so both give the
// same value from the same tensors.
//
// The candidate's sums (sum (f-q)^2; sum f*q and sum q^2) run in sixteen
// partial sums, so that one sample vectorizes (four AVX2 registers of four
// doubles) instead of waiting on one chain of additions: element i of the
// first n - n % 16 goes to partial i % 16, in element order; the partials
// combine as p[j] = ((s[j] + s[4 + j]) + s[8 + j]) + s[12 + j], then
// (p[0] + p[2]) + (p[1] + p[3]); the last n % 16 elements are added to that
// in order. Each term rounds as the scalar expression does (no FMA: the
// library is compiled with -ffp-contract=off). Every term is a square or a
// product of two floats in double, exact to 2^-48 relative, so the order
// moves a distance by a few units in its last place: far below any
// difference between two candidates' sensitivities.
#ifndef QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_
#define QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace quantd::mixed_precision::internal {

inline constexpr double kDistanceEps = 1e-8;

// Which code adds the partials: the fastest this CPU runs (AVX2 when it
// has it), or the portable scalar loop (what a CPU without AVX2 runs; the
// tests check both give the same bits).
enum class SumPath { kFastest, kPortable };

// sum over i < n of (double(f[i]) - q[i])^2, in the order above.
double SquaredDiffSum(const float* f, const float* q, int64_t n,
                      SumPath path = SumPath::kFastest);

// *dot = sum f[i] * q[i], *norm_q = sum q[i]^2 (in double), in the order
// above.
void DotAndNormSums(const float* f, const float* q, int64_t n, double* dot,
                    double* norm_q, SumPath path = SumPath::kFastest);

// mean((f-q)^2) / (mean(f^2) + 1e-8) from sum (f-q)^2 and sum f^2.
inline double NormalizedMseFromSums(double squared_error, double squared_norm,
                                    size_t count) {
  const double n = static_cast<double>(count);
  return (squared_error / n) / (squared_norm / n + kDistanceEps);
}

// (1 - cos(f, q)) / 2 from sum f*q, sum f^2 and sum q^2.
inline double CosineDistanceFromSums(double dot, double norm_f, double norm_q) {
  if (norm_f == 0 && norm_q == 0) return 0.0;
  if (norm_f == 0 || norm_q == 0) return 0.5;
  const double cs =
      std::clamp(dot / (std::sqrt(norm_f) * std::sqrt(norm_q)), -1.0, 1.0);
  return (1.0 - cs) / 2.0;
}

}  // namespace quantd::mixed_precision::internal

#endif  // QUANTD_CORE_MIXED_PRECISION_INTERNAL_DISTANCE_SUMS_H_
