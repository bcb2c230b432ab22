#include "core/hessian/weights_hessian.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/autodiff/gradient_graph.h"
#include "core/util/status_macros.h"

namespace quantd::hessian {
namespace {

// The seed of sample i's random stream (pruning's LFH uses the same base).
uint64_t SampleSeed(int64_t i) {
  return 0x5eed0000ULL + static_cast<uint64_t>(i);
}

// Runs fn(i) for i in [begin, end), in parallel on `pool` if it has threads;
// returns the first error in index order.
absl::Status ForRound(int64_t begin, int64_t end, ThreadPool* pool,
                      const std::function<absl::Status(int64_t)>& fn) {
  std::vector<absl::Status> status(end - begin);
  auto run = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) status[i] = fn(begin + i);
  };
  if (pool != nullptr && pool->num_threads() > 0) {
    pool->ParallelFor(end - begin, 1, run);
  } else {
    run(0, end - begin);
  }
  for (const absl::Status& s : status) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace

std::vector<float> NormalizeHmseScores(const std::vector<double>& sum, int n) {
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) {
    out[i] = static_cast<float>(std::sqrt(sum[i] / n));
  }
  return out;
}

absl::StatusOr<HessianScores> ComputeHmseScores(
    const Model& model, const std::vector<std::string>& kernels,
    const std::vector<std::map<std::string, Tensor>>& samples,
    const WeightsHessianOptions& options) {
  if (kernels.empty()) return HessianScores();
  const int n =
      std::min<int>(options.num_samples, static_cast<int>(samples.size()));
  if (n <= 0) {
    return absl::FailedPreconditionError(
        "Hessian scores: HMSE needs at least one calibration sample");
  }
  autodiff::GradientOptions gradient_options;
  gradient_options.initializers = kernels;
  gradient_options.input_gradients = false;
  gradient_options.executor.pool = options.pool;
  ASSIGN_OR_RETURN(std::unique_ptr<autodiff::GradientGraph> graph,
                   autodiff::GradientGraph::Create(
                       std::make_shared<const Model>(model), gradient_options));
  std::vector<KernelTarget> targets;
  for (const std::string& k : kernels) targets.push_back({k, 0});
  HutchinsonOptions hutchinson = options.hutchinson;
  hutchinson.granularity = Granularity::kPerElement;
  std::vector<std::vector<double>> sum;
  int64_t total_iterations = 0;
  for (int64_t begin = 0; begin < n; begin += kSamplesPerRound) {
    if (options.cancel != nullptr) RETURN_IF_ERROR(options.cancel->Check());
    const int64_t end = std::min<int64_t>(n, begin + kSamplesPerRound);
    std::vector<std::vector<std::vector<double>>> round(end - begin);
    std::vector<int> iterations(end - begin, 0);
    RETURN_IF_ERROR(ForRound(begin, end, options.pool, [&](int64_t i) {
      ASSIGN_OR_RETURN(
          round[i - begin],
          EstimateForSample(*graph, samples[i], targets, hutchinson,
                            SampleSeed(i), options.cancel,
                            &iterations[i - begin]));
      return absl::OkStatus();
    }));
    for (int it : iterations) total_iterations += it;
    for (auto& estimate : round) {  // in sample order
      if (sum.empty()) {
        sum = std::move(estimate);
        continue;
      }
      for (size_t k = 0; k < sum.size(); ++k) {
        for (size_t e = 0; e < sum[k].size(); ++e) sum[k][e] += estimate[k][e];
      }
    }
    if (options.progress != nullptr) {
      options.progress->Report(
          {options.stage, static_cast<double>(end) / n,
           absl::StrCat("Hessian scores: ", end, "/", n, " samples, ",
                        total_iterations / end,
                        " backward passes per sample on average")});
    }
  }
  HessianScores scores;
  for (size_t k = 0; k < kernels.size(); ++k) {
    scores[kernels[k]] = NormalizeHmseScores(sum[k], n);
  }
  return scores;
}

int64_t EstimateHmseMemoryBytes(int64_t kernel_elements,
                                int64_t activation_bytes_per_sample,
                                int threads) {
  const int64_t running = std::clamp(threads, 1, kSamplesPerRound);
  const int64_t w = std::max<int64_t>(0, kernel_elements);
  const int64_t a = std::max<int64_t>(0, activation_bytes_per_sample);
  // Tape values and their gradients, the kernels' gradients (float) per
  // running sample; a double estimate per sample of the round; the double
  // sum and the float scores.
  return running * (2 * a + 4 * w) + kSamplesPerRound * 8 * w + 12 * w;
}

}  // namespace quantd::hessian
