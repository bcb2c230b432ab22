#include "core/quantizers/internal/search.h"

#include <algorithm>
#include <cmath>

#include "core/quantizers/internal/numpy_compat.h"
#include "core/quantizers/types.h"
#include "core/runtime/thread_pool.h"

namespace quantd::quantizers::internal {
namespace {

// best = curr * imp + best * !imp, literally (inf * 0 is NaN in NumPy too).
double BlendLoss(double curr, double prev, bool imp) {
  return curr * static_cast<double>(imp) + prev * static_cast<double>(!imp);
}

// MCT's candidate loop: the first candidate of least loss, the loss blended
// as MCT does (a NaN loss sticks).
int BlendedArgMin(int64_t c, const std::vector<double>& cands,
                  const ChannelLoss& loss, double* best_loss) {
  int bp = 0;
  double bl = loss(c, cands[0], false);
  for (int i = 1; i < static_cast<int>(cands.size()); ++i) {
    const double il = loss(c, cands[i], false);
    const bool imp = il < bl;
    if (imp) bp = i;
    bl = BlendLoss(il, bl, imp);
  }
  *best_loss = bl;
  return bp;
}

// The same result where every loss is finite (MCT's blend is then a plain
// minimum, its first occurrence): candidates from the largest threshold down
// (those clip least, and the others are then proved worse by their clipped
// values alone), each skipped when `exceeds` proves its loss above the least
// found. Skipped losses are above the minimum, so neither it nor its first
// index changes. Returns -1, for MCT's loop, where an evaluated loss is not
// finite (a proof implies a finite loss).
int PrunedArgMin(int64_t c, const std::vector<double>& cands,
                 const ChannelLoss& loss, const ChannelPruning& pruning,
                 double* best_loss) {
  const auto& exceeds = pruning.exceeds;
  int best = -1;
  double bl = 0;
  for (int i = static_cast<int>(cands.size()) - 1; i >= 0; --i) {
    if (best >= 0 && exceeds(c, cands[i], bl)) continue;
    const double il = loss(c, cands[i], false);
    if (!std::isfinite(il)) return -1;
    if (best < 0 || il <= bl) {  // <=: the first index wins a tie
      best = i;
      bl = il;
    }
  }
  *best_loss = bl;
  return best;
}

}  // namespace

int64_t ArgMin(const double* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) return i;
    if (v[i] < v[best]) best = i;
  }
  return best;
}

void ForEachChannel(int64_t n, ThreadPool* pool,
                    const std::function<void(int64_t)>& fn) {
  if (pool == nullptr || pool->num_threads() == 0 || n < 2) {
    for (int64_t c = 0; c < n; ++c) fn(c);
    return;
  }
  pool->ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) fn(c);
  });
}

double SymmetricMinimize(double x0, bool x0_f32, const ScalarLoss& loss,
                         int n_intervals, int n_iter, int dec_freq) {
  double scale_lo = kBottomFactor, scale_hi = kUpperFactor;
  double curr = x0;
  double best_param = x0;
  double best_loss = loss(x0, x0_f32);
  std::vector<double> losses(n_intervals);
  for (int n = 0; n < n_iter; ++n) {
    const double prev = best_loss;
    const std::vector<double> cands =
        Linspace(curr * scale_lo, curr * scale_hi, n_intervals);
    for (int i = 0; i < n_intervals; ++i) losses[i] = loss(cands[i], false);
    const int64_t idx = ArgMin(losses.data(), n_intervals);
    curr = cands[idx];
    const double curr_loss = losses[idx];
    const bool imp = curr_loss < prev;
    if (imp) best_param = curr;
    best_loss = BlendLoss(curr_loss, prev, imp);
    const double diff = prev - curr_loss;
    if (0 < diff && diff < kDefaultTol) break;
    if (n % dec_freq == 0) {
      scale_lo *= kDecFactorLow;
      scale_hi *= kDecFactorHigh;
      scale_lo = std::min(scale_lo, kDecRangeBottom);
      scale_hi = std::max(scale_hi, kDecRangeUpper);
    }
  }
  return best_param;
}

std::vector<double> SymmetricMinimizePerChannel(const std::vector<double>& x0,
                                                bool x0_f32,
                                                const ChannelLoss& loss,
                                                int n_intervals, int n_iter,
                                                int dec_freq, ThreadPool* pool,
                                                const ChannelPruning& pruning) {
  const int64_t channels = static_cast<int64_t>(x0.size());
  double scale_lo = kBottomFactor, scale_hi = kUpperFactor;
  std::vector<double> curr = x0, best_param = x0, best_loss(channels);
  ForEachChannel(channels, pool,
                 [&](int64_t c) { best_loss[c] = loss(c, x0[c], x0_f32); });
  std::vector<double> curr_loss(channels), diff(channels);
  for (int n = 0; n < n_iter; ++n) {
    const std::vector<double> prev = best_loss;
    ForEachChannel(channels, pool, [&](int64_t c) {
      const std::vector<double> cands =
          Linspace(curr[c] * scale_lo, curr[c] * scale_hi, n_intervals);
      int best = -1;
      double bl = 0;
      if (pruning.argmin) {
        best = pruning.argmin(c, cands, &bl);
      } else if (pruning.exceeds) {
        best = PrunedArgMin(c, cands, loss, pruning, &bl);
      }
      if (best < 0) best = BlendedArgMin(c, cands, loss, &bl);
      const double bp = cands[best];
      curr[c] = bp;
      curr_loss[c] = bl;
      const bool imp = bl < prev[c];
      if (imp) best_param[c] = bp;
      best_loss[c] = BlendLoss(bl, prev[c], imp);
      diff[c] = prev[c] - bl;
    });
    const double mean_diff = Mean(diff.data(), channels);
    if (0 < mean_diff && mean_diff < kDefaultTol) break;
    if (n % dec_freq == 0) {
      scale_lo *= kDecFactorLow;
      scale_hi *= kDecFactorHigh;
      scale_lo = std::min(scale_lo, kDecRangeBottom);
      scale_hi = std::max(scale_hi, kDecRangeUpper);
    }
  }
  return best_param;
}

std::vector<std::array<double, 2>> UniformScalers(int samples) {
  const std::vector<double> a = Linspace(kBottomFactor, kUpperFactor, samples);
  std::vector<std::array<double, 2>> out;
  out.reserve(samples * samples);
  for (double x : a) {
    for (double y : a) out.push_back({x, y});
  }
  return out;
}

std::array<double, 2> UniformMinimize(
    std::array<double, 2> x0, bool x0_f32,
    const std::vector<std::array<double, 2>>& scalers,
    const ScalarRangeLoss& loss, int n_iter) {
  std::array<double, 2> base = x0, best_param = x0;
  double best_loss = loss(x0[0], x0[1], x0_f32);
  const int64_t k = static_cast<int64_t>(scalers.size());
  std::vector<double> losses(k);
  std::vector<std::array<double, 2>> ranges(k);
  for (int n = 0; n < n_iter; ++n) {
    const double prev = best_loss;
    for (int64_t i = 0; i < k; ++i) {
      ranges[i] = {base[0] * scalers[i][0], base[1] * scalers[i][1]};
      losses[i] = loss(ranges[i][0], ranges[i][1], false);
    }
    const int64_t idx = ArgMin(losses.data(), k);
    base = ranges[idx];
    const double curr_loss = losses[idx];
    const bool imp = curr_loss < prev;
    if (imp) best_param = base;
    best_loss = BlendLoss(curr_loss, prev, imp);
    const double diff = prev - curr_loss;
    if (0 < diff && diff < kDefaultTol) break;
  }
  return best_param;
}

std::vector<std::array<double, 2>> UniformMinimizePerChannel(
    const std::vector<std::array<double, 2>>& x0, bool x0_f32,
    const std::vector<std::array<double, 2>>& scalers,
    const ChannelRangeLoss& loss, int n_iter, ThreadPool* pool) {
  const int64_t channels = static_cast<int64_t>(x0.size());
  std::vector<std::array<double, 2>> base = x0, best_param = x0;
  std::vector<double> best_loss(channels), diff(channels);
  ForEachChannel(channels, pool, [&](int64_t c) {
    best_loss[c] = loss(c, x0[c][0], x0[c][1], x0_f32);
  });
  const int64_t k = static_cast<int64_t>(scalers.size());
  for (int n = 0; n < n_iter; ++n) {
    const std::vector<double> prev = best_loss;
    ForEachChannel(channels, pool, [&](int64_t c) {
      std::array<double, 2> bp = {base[c][0] * scalers[0][0],
                                  base[c][1] * scalers[0][1]};
      double bl = loss(c, bp[0], bp[1], false);
      for (int64_t i = 1; i < k; ++i) {
        const std::array<double, 2> r = {base[c][0] * scalers[i][0],
                                         base[c][1] * scalers[i][1]};
        const double rl = loss(c, r[0], r[1], false);
        const bool imp = rl < bl;
        if (imp) bp = r;
        bl = BlendLoss(rl, bl, imp);
      }
      base[c] = bp;
      const bool imp = bl < prev[c];
      if (imp) best_param[c] = bp;
      best_loss[c] = BlendLoss(bl, prev[c], imp);
      diff[c] = prev[c] - bl;
    });
    const double mean_diff = Mean(diff.data(), channels);
    if (0 < mean_diff && mean_diff < kDefaultTol) break;
  }
  return best_param;
}

}  // namespace quantd::quantizers::internal
