#include "core/pipeline/evaluation/squared_error_sums.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

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

// `n` more elements of four pairs, lane j = pair j from a[j] and b[j],
// added to the sums in `out`: four floats of each tensor, transposed so that
// one register holds the next element of the four, widened to float64 and
// added in element order. The intrinsics are not contracted into FMAs (no
// "fma" target), as the scalar loop is not.
__attribute__((target("avx2"))) void AddFourAvx2(
    const std::array<const float*, 4>& a, const std::array<const float*, 4>& b,
    int64_t n, std::array<SquaredErrorSums, 4>* out) {
  alignas(32) double s[4], e[4];
  for (int j = 0; j < 4; ++j) {
    s[j] = (*out)[j].signal;
    e[j] = (*out)[j].noise;
  }
  __m256d signal = _mm256_load_pd(s), noise = _mm256_load_pd(e);
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

SquaredErrorLanes::SquaredErrorLanes(Done done) : done_(std::move(done)) {}

SquaredErrorLanes::~SquaredErrorLanes() = default;

void SquaredErrorLanes::Add(std::string name, Tensor f, Tensor q) {
  SquaredErrorSums s;
  if (!Comparable(f, q)) {
    done_(name, s);
    return;
  }
  const int64_t n = f.num_elements();
  if (!kHaveAvx2 || n < 4) {
    AddScalar(f.data<float>(), q.data<float>(), 0, n, &s);
    done_(name, s);
    return;
  }
  if (lanes_.size() == 4) Advance();
  lanes_.push_back({std::move(name), std::move(f), std::move(q), 0, s});
}

void SquaredErrorLanes::Finish() {
  while (!lanes_.empty()) Advance();
}

// Every lane holds at least four elements still to add (Add and the loop
// below keep it so): all advance by the fewest any has, in whole groups of
// four, and those left with fewer than four finish one element at a time.
// Idle lanes read the first lane's elements and are discarded.
void SquaredErrorLanes::Advance() {
  int64_t m = lanes_[0].left();
  for (const Lane& l : lanes_) m = std::min(m, l.left());
  m = m / 4 * 4;
  std::array<const float*, 4> a, b;
  std::array<SquaredErrorSums, 4> sums;
  for (size_t j = 0; j < 4; ++j) {
    const Lane& l = lanes_[j < lanes_.size() ? j : 0];
    a[j] = l.f.data<float>() + l.offset;
    b[j] = l.q.data<float>() + l.offset;
    sums[j] = l.sums;
  }
  AddFourAvx2(a, b, m, &sums);
  for (size_t j = 0; j < lanes_.size(); ++j) {
    lanes_[j].sums = sums[j];
    lanes_[j].offset += m;
  }
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    if (it->left() >= 4) {
      ++it;
      continue;
    }
    AddScalar(it->f.data<float>(), it->q.data<float>(), it->offset,
              it->f.num_elements(), &it->sums);
    done_(it->name, it->sums);
    it = lanes_.erase(it);
  }
}

}  // namespace quantd
