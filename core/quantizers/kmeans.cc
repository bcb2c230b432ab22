#include "core/quantizers/kmeans.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"

namespace quantd::quantizers {
namespace {

// Uniform double in [0, 1) from 53 random bits (portable across libraries).
double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Index sampled with probability proportional to p (sum > 0).
int64_t Sample(const std::vector<double>& cumulative, std::mt19937_64& rng) {
  const double r = Uniform01(rng) * cumulative.back();
  auto it = std::upper_bound(cumulative.begin(), cumulative.end(), r);
  int64_t i = it - cumulative.begin();
  return std::min<int64_t>(i, static_cast<int64_t>(cumulative.size()) - 1);
}

struct Points {
  std::vector<double> x;  // sorted, distinct
  std::vector<double> w;  // summed weights, > 0
};

// Assigns sorted points to sorted centers; returns inertia and fills sums.
double Assign(const Points& p, const std::vector<double>& centers,
              std::vector<double>* wsum, std::vector<double>* wxsum,
              std::vector<int>* labels) {
  const int k = static_cast<int>(centers.size());
  wsum->assign(k, 0.0);
  wxsum->assign(k, 0.0);
  labels->resize(p.x.size());
  double inertia = 0;
  int c = 0;
  for (size_t i = 0; i < p.x.size(); ++i) {
    // Centers are sorted: advance while the next center is strictly closer.
    while (c + 1 < k &&
           std::abs(p.x[i] - centers[c + 1]) < std::abs(p.x[i] - centers[c])) {
      ++c;
    }
    (*labels)[i] = c;
    const double d = p.x[i] - centers[c];
    inertia += p.w[i] * d * d;
    (*wsum)[c] += p.w[i];
    (*wxsum)[c] += p.w[i] * p.x[i];
  }
  return inertia;
}

std::vector<double> PlusPlusInit(const Points& p, int k, std::mt19937_64& rng) {
  const int64_t n = static_cast<int64_t>(p.x.size());
  const int trials = 2 + static_cast<int>(std::log(static_cast<double>(k)));
  std::vector<double> centers;
  std::vector<double> cum(n);
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) cum[i] = (acc += p.w[i]);
  centers.push_back(p.x[Sample(cum, rng)]);
  std::vector<double> d2(n);
  for (int64_t i = 0; i < n; ++i) {
    const double d = p.x[i] - centers[0];
    d2[i] = d * d;
  }
  while (static_cast<int>(centers.size()) < k) {
    acc = 0;
    for (int64_t i = 0; i < n; ++i) cum[i] = (acc += p.w[i] * d2[i]);
    if (!(acc > 0)) {
      // Every point sits on a center: duplicate the last one.
      centers.push_back(centers.back());
      continue;
    }
    double best_pot = std::numeric_limits<double>::infinity();
    int64_t best = -1;
    for (int t = 0; t < trials; ++t) {
      const int64_t cand = Sample(cum, rng);
      double pot = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = p.x[i] - p.x[cand];
        pot += p.w[i] * std::min(d2[i], d * d);
      }
      if (pot < best_pot) {
        best_pot = pot;
        best = cand;
      }
    }
    centers.push_back(p.x[best]);
    for (int64_t i = 0; i < n; ++i) {
      const double d = p.x[i] - p.x[best];
      d2[i] = std::min(d2[i], d * d);
    }
  }
  return centers;
}

// Exact weighted 1-D k-means by dynamic programming with divide-and-conquer
// (the optimal split points are monotone): O(k n log n).
std::vector<double> OptimalCenters(const Points& p, int k) {
  const int64_t n = static_cast<int64_t>(p.x.size());
  if (k >= n) {
    std::vector<double> c = p.x;
    while (static_cast<int64_t>(c.size()) < k) c.push_back(p.x.back());
    return c;
  }
  std::vector<double> w(n + 1, 0), wx(n + 1, 0), wxx(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    w[i + 1] = w[i] + p.w[i];
    wx[i + 1] = wx[i] + p.w[i] * p.x[i];
    wxx[i + 1] = wxx[i] + p.w[i] * p.x[i] * p.x[i];
  }
  auto cost = [&](int64_t l, int64_t r) {  // points [l, r)
    const double sw = w[r] - w[l];
    if (sw <= 0) return 0.0;
    const double sx = wx[r] - wx[l];
    return std::max(0.0, (wxx[r] - wxx[l]) - sx * sx / sw);
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> d(k + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> arg(k + 1, std::vector<int64_t>(n + 1, 0));
  d[0][0] = 0;
  for (int m = 1; m <= k; ++m) {
    // d[m][r] = min_{l < r} d[m-1][l] + cost(l, r).
    std::function<void(int64_t, int64_t, int64_t, int64_t)> solve =
        [&](int64_t lo, int64_t hi, int64_t opt_lo, int64_t opt_hi) {
          if (lo > hi) return;
          const int64_t mid = (lo + hi) / 2;
          double best = inf;
          int64_t best_l = opt_lo;
          for (int64_t l = opt_lo; l <= std::min(mid - 1, opt_hi); ++l) {
            const double v = d[m - 1][l] + cost(l, mid);
            if (v < best) {
              best = v;
              best_l = l;
            }
          }
          d[m][mid] = best;
          arg[m][mid] = best_l;
          solve(lo, mid - 1, opt_lo, best_l);
          solve(mid + 1, hi, best_l, opt_hi);
        };
    solve(m, n, m - 1, n - 1);
  }
  std::vector<double> centers;
  int64_t r = n;
  for (int m = k; m >= 1; --m) {
    const int64_t l = arg[m][r];
    const double sw = w[r] - w[l];
    centers.push_back(sw > 0 ? (wx[r] - wx[l]) / sw : p.x[l]);
    r = l;
  }
  std::sort(centers.begin(), centers.end());
  return centers;
}

}  // namespace

absl::StatusOr<std::vector<double>> WeightedKMeans1D(
    absl::Span<const double> points, absl::Span<const double> weights, int k,
    const KMeansOptions& options) {
  auto candidates = KMeansCandidates1D(points, weights, k, options);
  if (!candidates.ok()) return candidates.status();
  std::vector<double> best;
  double best_inertia = std::numeric_limits<double>::infinity();
  for (const auto& c : *candidates) {
    const double inertia = KMeansObjective(points, weights, c);
    if (inertia < best_inertia) {
      best_inertia = inertia;
      best = c;
    }
  }
  return best;
}

absl::StatusOr<std::vector<std::vector<double>>> KMeansCandidates1D(
    absl::Span<const double> points, absl::Span<const double> weights, int k,
    const KMeansOptions& options) {
  if (k < 1) return absl::InvalidArgumentError("k-means needs k >= 1");
  if (points.size() != weights.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("k-means got ", points.size(), " points and ",
                     weights.size(), " weights"));
  }
  std::map<double, double> merged;

  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i]) || !(weights[i] >= 0) ||
        !std::isfinite(weights[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("k-means point ", i, " or its weight is not finite"));
    }
    if (weights[i] > 0) {
      merged[points[i]] += weights[i];
    }
  }
  if (merged.empty()) {
    return absl::InvalidArgumentError(
        "k-means needs a point with positive weight");
  }
  Points p;
  for (const auto& [x, w] : merged) {
    p.x.push_back(x);
    p.w.push_back(w);
  }
  // sklearn: tol scaled by the (unweighted) variance of the data.
  double m = 0;
  for (double x : points) m += x;
  m /= static_cast<double>(points.size());
  double var = 0;
  for (double x : points) var += (x - m) * (x - m);
  var /= static_cast<double>(points.size());
  const double tol = options.tol * var;

  std::mt19937_64 rng(options.seed);
  std::vector<std::vector<double>> out;
  std::vector<double> wsum, wxsum;
  std::vector<int> labels, prev_labels;
  for (int run = 0; run < std::max(options.n_init, 1); ++run) {
    std::vector<double> centers = PlusPlusInit(p, k, rng);
    std::sort(centers.begin(), centers.end());
    double inertia = Assign(p, centers, &wsum, &wxsum, &labels);
    for (int it = 0; it < options.max_iter; ++it) {
      std::vector<double> next = centers;
      for (int c = 0; c < k; ++c) {
        if (wsum[c] > 0) next[c] = wxsum[c] / wsum[c];
      }
      double shift = 0;
      for (int c = 0; c < k; ++c)
        shift += (next[c] - centers[c]) * (next[c] - centers[c]);
      std::sort(next.begin(), next.end());
      centers = next;
      prev_labels = labels;
      inertia = Assign(p, centers, &wsum, &wxsum, &labels);
      if (labels == prev_labels || shift <= tol) break;
    }
    (void)inertia;
    out.push_back(std::move(centers));
  }
  out.push_back(OptimalCenters(p, k));
  return out;
}

double KMeansObjective(absl::Span<const double> points,
                       absl::Span<const double> weights,
                       absl::Span<const double> centers) {
  double sse = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    // The point read once: the sanitizer trees do not inline Span's
    // bounds-checked operator[], which read it twice per center (a fifth of
    // the MCT golden test's time under ASan). The same arithmetic.
    const double p = points[i];
    double best = std::numeric_limits<double>::infinity();
    for (double c : centers) best = std::min(best, (p - c) * (p - c));
    sse += weights[i] * best;
  }
  return sse;
}

}  // namespace quantd::quantizers
