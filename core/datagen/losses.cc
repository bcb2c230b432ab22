#include "core/datagen/losses.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace quantd::datagen {

namespace {
constexpr double kStdEps = 1e-6;  // MCT's BatchStatsHolder eps
}  // namespace

absl::Status AddChannelSums(const BnTarget& target, const Tensor& t,
                            ChannelSums* sums) {
  const int64_t c = static_cast<int64_t>(target.mean.size());
  if (t.dtype() != DType::kFloat || t.rank() < 2 || t.dim(0) != 1 ||
      t.dim(1) != c) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", target.tensor, "' (", target.source, ") is ",
                     t.DebugString(), ", expected [1, ", c, ", ...]"));
  }
  const int64_t inner = t.num_elements() / c;
  if (sums->sum.empty()) {
    sums->sum.assign(c, 0.0);
    sums->sum_sq.assign(c, 0.0);
  }
  const float* p = t.data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < inner; ++i) {
      const double v = p[ch * inner + i];
      s += v;
      s2 += v * v;
    }
    sums->sum[ch] += s;
    sums->sum_sq[ch] += s2;
  }
  sums->per_channel += inner;
  return absl::OkStatus();
}

BnGradient BnAlignment(const BnTarget& target, const ChannelSums& sums,
                       double weight) {
  const size_t c = target.mean.size();
  const double m = static_cast<double>(sums.per_channel);
  BnGradient g;
  g.a.resize(c);
  g.b.resize(c);
  double mean_term = 0, std_term = 0;
  for (size_t ch = 0; ch < c; ++ch) {
    const double mu = sums.sum[ch] / m;
    const double var = std::max(sums.sum_sq[ch] / m - mu * mu, 0.0);
    const double sigma = std::sqrt(var + kStdEps);
    const double dm = mu - target.mean[ch], ds = sigma - target.std[ch];
    mean_term += dm * dm;
    std_term += ds * ds;
    const double k = weight * 2.0 / static_cast<double>(c);
    // d mu / dx = 1 / M; d sigma / dx = (x - mu) / (M sigma).
    const double b = k * ds / (m * sigma);
    g.b[ch] = static_cast<float>(b);
    g.a[ch] = static_cast<float>(k * dm / m - b * mu);
  }
  g.loss = weight * (mean_term + std_term) / static_cast<double>(c);
  return g;
}

Tensor BnSeed(const BnGradient& g, const Tensor& t) {
  Tensor seed = Tensor::Uninitialized(DType::kFloat, t.shape());
  const int64_t c = static_cast<int64_t>(g.a.size());
  const int64_t inner = t.num_elements() / c;
  const float* x = t.data<float>();
  float* s = seed.mutable_data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    const float a = g.a[ch], b = g.b[ch];
    for (int64_t i = 0; i < inner; ++i) {
      s[ch * inner + i] = a + b * x[ch * inner + i];
    }
  }
  return seed;
}

double OutputLossSeed(const Tensor& output, double scale, Tensor* seed) {
  *seed = Tensor(DType::kFloat, output.shape());
  const int64_t n = output.num_elements();
  if (n == 0) return 0;
  const float* y = output.data<float>();
  int64_t hi = 0, lo = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (y[i] > y[hi]) hi = i;
    if (y[i] < y[lo]) lo = i;
  }
  float* s = seed->mutable_data<float>();
  s[hi] -= static_cast<float>(scale);
  s[lo] += static_cast<float>(scale);
  return -scale * (static_cast<double>(y[hi]) - y[lo]);
}

}  // namespace quantd::datagen
