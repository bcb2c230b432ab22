#include "core/mixed_precision/sample_distance.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "core/mixed_precision/internal/distance_sums.h"
#include "core/mixed_precision/sensitivity_metric.h"

namespace quantd::mixed_precision {
namespace internal {
namespace {

constexpr int64_t kPartials = 16;
// The float side is long out of cache (the sensitivity's float runs kept it
// for a chunk of samples): ask for both streams 4 KiB ahead, one line per
// stream per step (bench/mixed_precision/RESULTS.md).
constexpr int64_t kPrefetchAhead = 1024;

// The partials' combination of distance_sums.h.
double Combine(const double* s) {
  double p[4];
  for (int j = 0; j < 4; ++j) p[j] = ((s[j] + s[4 + j]) + s[8 + j]) + s[12 + j];
  return (p[0] + p[2]) + (p[1] + p[3]);
}

// One element's terms: (f-q)^2 into *a, or f*q into *a and q^2 into *b.
template <bool kDot>
inline void AddTerms(float f, float q, double* a, double* b) {
  if (kDot) {
    *a += static_cast<double>(f) * q;
    *b += static_cast<double>(q) * q;
  } else {
    const double d = static_cast<double>(f) - q;
    *a += d * d;
  }
}

// The first `blocked` elements (a multiple of kPartials) in the partials.
template <bool kDot>
void BlockedScalar(const float* f, const float* q, int64_t blocked, double* a,
                   double* b) {
  double sa[kPartials] = {}, sb[kPartials] = {};
  for (int64_t i = 0; i < blocked; ++i) {
    AddTerms<kDot>(f[i], q[i], &sa[i % kPartials], &sb[i % kPartials]);
  }
  *a = Combine(sa);
  *b = Combine(sb);
}

// Register k holds partials 4k .. 4k + 3; adding them in register order and
// then the two halves is Combine.
__attribute__((target("avx2"))) double CombineAvx2(__m256d r0, __m256d r1,
                                                   __m256d r2, __m256d r3) {
  const __m256d t = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(r0, r1), r2), r3);
  const __m128d u =
      _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
  return _mm_cvtsd_f64(u) + _mm_cvtsd_f64(_mm_unpackhi_pd(u, u));
}

// Adds the terms of elements i .. i + 3 to *a (and *b).
template <bool kDot>
__attribute__((target("avx2"))) inline void StepAvx2(const float* f,
                                                     const float* q, __m256d* a,
                                                     __m256d* b) {
  const __m256d fd = _mm256_cvtps_pd(_mm_loadu_ps(f));
  const __m256d qd = _mm256_cvtps_pd(_mm_loadu_ps(q));
  if (kDot) {
    *a = _mm256_add_pd(*a, _mm256_mul_pd(fd, qd));
    *b = _mm256_add_pd(*b, _mm256_mul_pd(qd, qd));
  } else {
    const __m256d d = _mm256_sub_pd(fd, qd);
    *a = _mm256_add_pd(*a, _mm256_mul_pd(d, d));
  }
}

// Four named accumulators per sum (an array of them is kept in memory by
// the compiler: a store-to-load chain per step).
template <bool kDot>
__attribute__((target("avx2"))) void BlockedAvx2(const float* f, const float* q,
                                                 int64_t blocked, double* a,
                                                 double* b) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  __m256d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (int64_t i = 0; i < blocked; i += kPartials) {
    _mm_prefetch(reinterpret_cast<const char*>(f + i + kPrefetchAhead),
                 _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(q + i + kPrefetchAhead),
                 _MM_HINT_T0);
    StepAvx2<kDot>(f + i, q + i, &a0, &b0);
    StepAvx2<kDot>(f + i + 4, q + i + 4, &a1, &b1);
    StepAvx2<kDot>(f + i + 8, q + i + 8, &a2, &b2);
    StepAvx2<kDot>(f + i + 12, q + i + 12, &a3, &b3);
  }
  *a = CombineAvx2(a0, a1, a2, a3);
  *b = CombineAvx2(b0, b1, b2, b3);
  // Clean AVX state before the scalar code that follows (as
  // core/stats/batch_histogram.cc).
  _mm256_zeroupper();
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

// The partials, then the last n % kPartials elements in order.
template <bool kDot>
void Sums(const float* f, const float* q, int64_t n, SumPath path, double* a,
          double* b) {
  const int64_t blocked = n - n % kPartials;
  if (kHaveAvx2 && path == SumPath::kFastest) {
    BlockedAvx2<kDot>(f, q, blocked, a, b);
  } else {
    BlockedScalar<kDot>(f, q, blocked, a, b);
  }
  for (int64_t i = blocked; i < n; ++i) AddTerms<kDot>(f[i], q[i], a, b);
}

}  // namespace

double SquaredDiffSum(const float* f, const float* q, int64_t n, SumPath path) {
  double a = 0, unused = 0;
  Sums<false>(f, q, n, path, &a, &unused);
  return a;
}

void DotAndNormSums(const float* f, const float* q, int64_t n, double* dot,
                    double* norm_q, SumPath path) {
  Sums<true>(f, q, n, path, dot, norm_q);
}

}  // namespace internal

FloatSideSums SumFloatSide(absl::Span<const float> f) {
  FloatSideSums sums;
  for (const float v : f) {
    sums.finite = sums.finite && std::isfinite(v);
    sums.squared_norm += static_cast<double>(v) * v;
  }
  return sums;
}

absl::StatusOr<double> DistanceToFloat(SampleDistance kind,
                                       absl::Span<const float> f,
                                       absl::Span<const float> q,
                                       const FloatSideSums& float_side) {
  const bool cosine = kind == SampleDistance::kCosine;
  // Inputs the one-sample checks would reject on the float side or on the
  // sizes go to the one-sample function for its error.
  if (float_side.finite && !f.empty() && f.size() == q.size()) {
    const auto n = static_cast<int64_t>(f.size());
    double a = 0, b = 0;
    if (cosine) {
      internal::DotAndNormSums(f.data(), q.data(), n, &a, &b);
    } else {
      a = internal::SquaredDiffSum(f.data(), q.data(), n);
    }
    // With a finite f, sum (f-q)^2 and sum q^2 are finite exactly when every
    // q is (|f-q| < 2^129: no square or sum of them overflows); otherwise
    // the one-sample function names the element.
    if (std::isfinite(cosine ? b : a)) {
      return cosine ? internal::CosineDistanceFromSums(
                          a, float_side.squared_norm, b)
                    : internal::NormalizedMseFromSums(
                          a, float_side.squared_norm, f.size());
    }
  }
  return cosine ? CosineDistance(f, q) : NormalizedMse(f, q);
}

}  // namespace quantd::mixed_precision
