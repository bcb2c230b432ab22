#include "core/quantizers/kmeans.h"

#include <algorithm>
#include <cmath>
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

}  // namespace

absl::StatusOr<std::vector<double>> WeightedKMeans1D(
    absl::Span<const double> points, absl::Span<const double> weights, int k,
    const KMeansOptions& options) {
  if (k < 1) return absl::InvalidArgumentError("k-means needs k >= 1");
  if (points.size() != weights.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("k-means got ", points.size(), " points and ",
                     weights.size(), " weights"));
  }
  std::map<double, double> merged;
  double total_w = 0, mean = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i]) || !(weights[i] >= 0) ||
        !std::isfinite(weights[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("k-means point ", i, " or its weight is not finite"));
    }
    if (weights[i] > 0) {
      merged[points[i]] += weights[i];
      total_w += weights[i];
      mean += weights[i] * points[i];
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
  std::vector<double> best_centers;
  double best_inertia = std::numeric_limits<double>::infinity();
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
    if (inertia < best_inertia) {
      best_inertia = inertia;
      best_centers = centers;
    }
  }
  return best_centers;
}

double KMeansObjective(absl::Span<const double> points,
                       absl::Span<const double> weights,
                       absl::Span<const double> centers) {
  double sse = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (double c : centers)
      best = std::min(best, (points[i] - c) * (points[i] - c));
    sse += weights[i] * best;
  }
  return sse;
}

}  // namespace quantd::quantizers
