#include "core/mixed_precision/distance_lanes.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/mixed_precision/internal/distance_sums.h"
#include "core/mixed_precision/sensitivity_metric.h"

namespace quantd::mixed_precision {
namespace {

constexpr int kLanes = 4;

// Per lane (sample): kCosine ? {sum f*q, sum q^2} : {sum (f-q)^2, unused},
// every sum in element order: the one-sample loops' operations.
struct LaneSums {
  double a[kLanes] = {0, 0, 0, 0};
  double b[kLanes] = {0, 0, 0, 0};
};

template <bool kCosine>
void LaneSumsScalar(const float* const* f, const float* const* q, int64_t n,
                    LaneSums* out) {
  for (int l = 0; l < kLanes; ++l) {
    double a = 0, b = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (kCosine) {
        a += static_cast<double>(f[l][i]) * q[l][i];
        b += static_cast<double>(q[l][i]) * q[l][i];
      } else {
        const double diff = static_cast<double>(f[l][i]) - q[l][i];
        a += diff * diff;
      }
    }
    out->a[l] = a;
    out->b[l] = b;
  }
}

// The job's tensors are long out of cache: eight streams (f and q of four
// samples) are more than the hardware prefetcher keeps ahead of, so the
// squared-difference loop asks for the line 2 KiB ahead of every stream
// (bench/mixed_precision/RESULTS.md, the distance lanes).
constexpr int64_t kFloatsPerLine = 16;
constexpr int64_t kPrefetchAhead = 512;

// sum (f-q)^2, four elements of four samples at a time: each sample's
// squares in its own register, then transposed (exact moves) so that row k
// holds element i+k of every sample. Squaring before the transpose moves
// the doubles once instead of f and q each: half the shuffles, which bound
// the loop with the conversions; the additions' latency is the other
// bound. vcvtps2pd is exact, as the scalar promotion; mul and add round
// separately: this file is compiled with -ffp-contract=off and "avx2"
// enables no FMA.
__attribute__((target("avx2"))) void SquaredDiffLaneSumsAvx2(
    const float* const* f, const float* const* q, int64_t n, LaneSums* out) {
  __m256d a = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d s[kLanes];
    if (i % kFloatsPerLine == 0 && i + kPrefetchAhead < n) {
      for (int l = 0; l < kLanes; ++l) {
        _mm_prefetch(reinterpret_cast<const char*>(f[l] + i + kPrefetchAhead),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(q[l] + i + kPrefetchAhead),
                     _MM_HINT_T0);
      }
    }
    for (int l = 0; l < kLanes; ++l) {
      const __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(f[l] + i)),
                                      _mm256_cvtps_pd(_mm_loadu_ps(q[l] + i)));
      s[l] = _mm256_mul_pd(d, d);
    }
    // t0 = s0[0] s1[0] s0[2] s1[2], t1 = s0[1] s1[1] s0[3] s1[3]; t2, t3
    // the same of s2 and s3.
    const __m256d t0 = _mm256_unpacklo_pd(s[0], s[1]);
    const __m256d t1 = _mm256_unpackhi_pd(s[0], s[1]);
    const __m256d t2 = _mm256_unpacklo_pd(s[2], s[3]);
    const __m256d t3 = _mm256_unpackhi_pd(s[2], s[3]);
    a = _mm256_add_pd(a, _mm256_permute2f128_pd(t0, t2, 0x20));  // i
    a = _mm256_add_pd(a, _mm256_permute2f128_pd(t1, t3, 0x20));  // i + 1
    a = _mm256_add_pd(a, _mm256_permute2f128_pd(t0, t2, 0x31));  // i + 2
    a = _mm256_add_pd(a, _mm256_permute2f128_pd(t1, t3, 0x31));  // i + 3
  }
  for (; i < n; ++i) {
    const __m256d d =
        _mm256_sub_pd(_mm256_set_pd(f[3][i], f[2][i], f[1][i], f[0][i]),
                      _mm256_set_pd(q[3][i], q[2][i], q[1][i], q[0][i]));
    a = _mm256_add_pd(a, _mm256_mul_pd(d, d));
  }
  _mm256_storeu_pd(out->a, a);
  // Clean AVX state before the scalar code that follows (as
  // core/stats/batch_histogram.cc).
  _mm256_zeroupper();
}

// One step of the cosine sums: element i of the four samples.
__attribute__((target("avx2"))) inline void CosineStep(__m256d fd, __m256d qd,
                                                       __m256d* a, __m256d* b) {
  *a = _mm256_add_pd(*a, _mm256_mul_pd(fd, qd));
  *b = _mm256_add_pd(*b, _mm256_mul_pd(qd, qd));
}

// sum f*q and sum q^2, four elements of four samples at a time: loaded per
// sample, transposed so that row k holds element i+k of every sample.
__attribute__((target("avx2"))) void CosineLaneSumsAvx2(const float* const* f,
                                                        const float* const* q,
                                                        int64_t n,
                                                        LaneSums* out) {
  __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m128 f0 = _mm_loadu_ps(f[0] + i), f1 = _mm_loadu_ps(f[1] + i);
    __m128 f2 = _mm_loadu_ps(f[2] + i), f3 = _mm_loadu_ps(f[3] + i);
    __m128 q0 = _mm_loadu_ps(q[0] + i), q1 = _mm_loadu_ps(q[1] + i);
    __m128 q2 = _mm_loadu_ps(q[2] + i), q3 = _mm_loadu_ps(q[3] + i);
    _MM_TRANSPOSE4_PS(f0, f1, f2, f3);
    _MM_TRANSPOSE4_PS(q0, q1, q2, q3);
    CosineStep(_mm256_cvtps_pd(f0), _mm256_cvtps_pd(q0), &a, &b);
    CosineStep(_mm256_cvtps_pd(f1), _mm256_cvtps_pd(q1), &a, &b);
    CosineStep(_mm256_cvtps_pd(f2), _mm256_cvtps_pd(q2), &a, &b);
    CosineStep(_mm256_cvtps_pd(f3), _mm256_cvtps_pd(q3), &a, &b);
  }
  for (; i < n; ++i) {
    CosineStep(_mm256_set_pd(f[3][i], f[2][i], f[1][i], f[0][i]),
               _mm256_set_pd(q[3][i], q[2][i], q[1][i], q[0][i]), &a, &b);
  }
  _mm256_storeu_pd(out->a, a);
  _mm256_storeu_pd(out->b, b);
  _mm256_zeroupper();
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

template <bool kCosine>
void LaneSumsOf(const float* const* f, const float* const* q, int64_t n,
                LaneSums* out) {
  if (kHaveAvx2) {
    if (kCosine) {
      CosineLaneSumsAvx2(f, q, n, out);
    } else {
      SquaredDiffLaneSumsAvx2(f, q, n, out);
    }
  } else {
    LaneSumsScalar<kCosine>(f, q, n, out);
  }
}

// Samples the lanes can take: the one-sample checks would pass on the float
// side and the sizes agree. The others go to the one-sample function.
bool LaneEligible(absl::Span<const float> f, absl::Span<const float> q,
                  const FloatSideSums& side) {
  return side.finite && !f.empty() && f.size() == q.size();
}

}  // namespace

FloatSideSums SumFloatSide(absl::Span<const float> f) {
  FloatSideSums sums;
  for (const float v : f) {
    sums.finite = sums.finite && std::isfinite(v);
    sums.squared_norm += static_cast<double>(v) * v;
  }
  return sums;
}

absl::Status DistancesOverSamples(LaneDistance kind,
                                  absl::Span<const absl::Span<const float>> f,
                                  absl::Span<const absl::Span<const float>> q,
                                  absl::Span<const FloatSideSums> float_side,
                                  absl::Span<double> out) {
  const size_t count = f.size();
  if (q.size() != count || float_side.size() != count || out.size() != count) {
    return absl::InvalidArgumentError(
        "distances over samples: f, q, float_side and out differ in length");
  }
  const bool cosine = kind == LaneDistance::kCosine;
  // Samples left to the one-sample function (its error, if any, is the
  // answer; a non-finite q makes a lane's sum non-finite: see below).
  std::vector<char> single(count, 0);
  size_t s = 0;
  while (s < count) {
    if (!LaneEligible(f[s], q[s], float_side[s])) {
      single[s++] = 1;
      continue;
    }
    const size_t n = f[s].size();
    size_t lane_of[kLanes];
    int lanes = 0;
    while (s < count && lanes < kLanes && f[s].size() == n &&
           LaneEligible(f[s], q[s], float_side[s])) {
      lane_of[lanes++] = s++;
    }
    const float* fp[kLanes];
    const float* qp[kLanes];
    for (int l = 0; l < kLanes; ++l) {  // idle lanes repeat lane 0
      fp[l] = f[lane_of[l < lanes ? l : 0]].data();
      qp[l] = q[lane_of[l < lanes ? l : 0]].data();
    }
    LaneSums sums;
    if (cosine) {
      LaneSumsOf<true>(fp, qp, static_cast<int64_t>(n), &sums);
    } else {
      LaneSumsOf<false>(fp, qp, static_cast<int64_t>(n), &sums);
    }
    for (int l = 0; l < lanes; ++l) {
      const size_t t = lane_of[l];
      // With a finite f, sum (f-q)^2 and sum q^2 are finite exactly when
      // every q is (|f-q| < 2^129: no square or sum of them overflows).
      if (!std::isfinite(cosine ? sums.b[l] : sums.a[l])) {
        single[t] = 1;
        continue;
      }
      out[t] = cosine ? internal::CosineDistanceFromSums(
                            sums.a[l], float_side[t].squared_norm, sums.b[l])
                      : internal::NormalizedMseFromSums(
                            sums.a[l], float_side[t].squared_norm, n);
    }
  }
  for (size_t t = 0; t < count; ++t) {
    if (!single[t]) continue;
    absl::StatusOr<double> d =
        cosine ? CosineDistance(f[t], q[t]) : NormalizedMse(f[t], q[t]);
    if (!d.ok()) return d.status();
    out[t] = *d;
  }
  return absl::OkStatus();
}

}  // namespace quantd::mixed_precision
