#include "core/pipeline/evaluation/squared_error_sums.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace quantd {
namespace {

bool Comparable(const Tensor& f, const Tensor& q) {
  return f.dtype() == DType::kFloat && q.dtype() == DType::kFloat &&
         f.num_elements() == q.num_elements();
}

// Elements [begin, end) added to `s`, one at a time.
void AddScalar(const float* a, const float* b, int64_t begin, int64_t end,
               SquaredErrorSums* s) {
  double signal = s->signal, noise = s->noise;
  for (int64_t i = begin; i < end; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    signal += static_cast<double>(a[i]) * a[i];
    noise += d * d;
  }
  s->signal = signal;
  s->noise = noise;
}

// The first `n` elements of four pairs, lane j = pair j: four floats of
// each tensor, transposed so that one register holds element i of the four,
// widened to float64 and added in element order. The intrinsics are not
// contracted into FMAs (no "fma" target), as the scalar loop is not.
__attribute__((target("avx2"))) void AddFourAvx2(
    const std::array<const float*, 4>& a, const std::array<const float*, 4>& b,
    int64_t n, std::array<SquaredErrorSums, 4>* out) {
  __m256d signal = _mm256_setzero_pd(), noise = _mm256_setzero_pd();
  for (int64_t i = 0; i + 4 <= n; i += 4) {
    __m128 a0 = _mm_loadu_ps(a[0] + i), a1 = _mm_loadu_ps(a[1] + i);
    __m128 a2 = _mm_loadu_ps(a[2] + i), a3 = _mm_loadu_ps(a[3] + i);
    __m128 b0 = _mm_loadu_ps(b[0] + i), b1 = _mm_loadu_ps(b[1] + i);
    __m128 b2 = _mm_loadu_ps(b[2] + i), b3 = _mm_loadu_ps(b[3] + i);
    _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
    _MM_TRANSPOSE4_PS(b0, b1, b2, b3);
    const __m128 as[4] = {a0, a1, a2, a3};
    const __m128 bs[4] = {b0, b1, b2, b3};
    for (int k = 0; k < 4; ++k) {
      const __m256d x = _mm256_cvtps_pd(as[k]);
      const __m256d d = _mm256_sub_pd(x, _mm256_cvtps_pd(bs[k]));
      signal = _mm256_add_pd(signal, _mm256_mul_pd(x, x));
      noise = _mm256_add_pd(noise, _mm256_mul_pd(d, d));
    }
  }
  alignas(32) double s[4], e[4];
  _mm256_store_pd(s, signal);
  _mm256_store_pd(e, noise);
  _mm256_zeroupper();  // see core/stats/batch_histogram.cc
  for (int j = 0; j < 4; ++j) (*out)[j] = {s[j], e[j]};
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

SquaredErrorSums CompareTensors(const Tensor& f, const Tensor& q) {
  SquaredErrorSums s;
  if (!Comparable(f, q)) return s;
  AddScalar(f.data<float>(), q.data<float>(), 0, f.num_elements(), &s);
  return s;
}

std::array<SquaredErrorSums, 4> CompareFourTensors(
    const std::array<const Tensor*, 4>& f,
    const std::array<const Tensor*, 4>& q) {
  std::array<SquaredErrorSums, 4> out;
  std::array<const float*, 4> a{}, b{};
  int64_t common = -1;  // elements every comparable pair has
  for (int j = 0; j < 4; ++j) {
    if (!Comparable(*f[j], *q[j])) {
      common = 0;
      continue;
    }
    a[j] = f[j]->data<float>();
    b[j] = q[j]->data<float>();
    const int64_t n = f[j]->num_elements();
    common = common < 0 ? n : std::min(common, n);
  }
  common = kHaveAvx2 ? std::max<int64_t>(common, 0) / 4 * 4 : 0;
  if (common > 0) AddFourAvx2(a, b, common, &out);
  for (int j = 0; j < 4; ++j) {
    if (a[j] == nullptr) continue;
    AddScalar(a[j], b[j], common, f[j]->num_elements(), &out[j]);
  }
  return out;
}

}  // namespace quantd
