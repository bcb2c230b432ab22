// MCT's search loops (qparams_search.py), independent of what is searched:
// the loss callbacks quantize and measure. Per-channel loops run channels in
// lock-step so the early-stop test (mean improvement) sees every channel;
// a ThreadPool, when given, parallelises channels without changing results.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_SEARCH_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_SEARCH_H_

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace quantd {
class ThreadPool;
}

namespace quantd::quantizers::internal {

// loss(t, param_is_f32): param_is_f32 marks the initial parameter when MCT
// holds it as float32 (NumPy then quantizes in float32).
using ScalarLoss = std::function<double(double, bool)>;
// Loss of channel c at threshold t.
using ChannelLoss = std::function<double(int64_t, double, bool)>;
using ScalarRangeLoss = std::function<double(double, double, bool)>;
using ChannelRangeLoss = std::function<double(int64_t, double, double, bool)>;

// qparams_symmetric_iterative_minimization, per tensor.
double SymmetricMinimize(double x0, bool x0_f32, const ScalarLoss& loss,
                         int n_intervals, int n_iter, int dec_freq);
// What the pruned per-channel search asks of its loss (see
// SymmetricMinimizePerChannel).
struct ChannelPruning {
  // Whether loss(c, t, false) > loss is certain without evaluating it (false
  // when it is not known); cheaper than the loss.
  std::function<bool(int64_t c, double t, double loss)> exceeds;
  // Optional, in place of `exceeds`: that pruned loop over an iteration's
  // candidates of channel c run by the loss itself, without a call per
  // candidate: the index and least loss MCT's loop finds, or -1 where an
  // evaluated loss is not finite (MCT's loop then runs).
  std::function<int(int64_t c, const std::vector<double>& cands,
                    double* best_loss)>
      argmin;
};

// The same per channel. With `pruning.exceeds` (or `argmin`), a candidate
// proved worse than a loss already evaluated in the iteration is skipped: it
// could not be the iteration's best, so the result is the same as without.
std::vector<double> SymmetricMinimizePerChannel(
    const std::vector<double>& x0, bool x0_f32, const ChannelLoss& loss,
    int n_intervals, int n_iter, int dec_freq, ThreadPool* pool,
    const ChannelPruning& pruning = {});

// itertools.product(linspace(0.7,1.2,S), linspace(0.7,1.2,S)).
std::vector<std::array<double, 2>> UniformScalers(int samples);

// iterative_uniform_dynamic_range_search, per tensor: returns {min, max}.
std::array<double, 2> UniformMinimize(
    std::array<double, 2> x0, bool x0_f32,
    const std::vector<std::array<double, 2>>& scalers,
    const ScalarRangeLoss& loss, int n_iter);
std::vector<std::array<double, 2>> UniformMinimizePerChannel(
    const std::vector<std::array<double, 2>>& x0, bool x0_f32,
    const std::vector<std::array<double, 2>>& scalers,
    const ChannelRangeLoss& loss, int n_iter, ThreadPool* pool);

// np.argmin: first minimum, or the first NaN if any.
int64_t ArgMin(const double* v, int64_t n);

// Runs fn(c) for c in [0, n), in parallel when a pool is given.
void ForEachChannel(int64_t n, ThreadPool* pool,
                    const std::function<void(int64_t)>& fn);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_SEARCH_H_
