// LFH (MCT's LFHImportanceMetric + HessianInfoService, weights mode, per
// output channel), on core/autodiff:
//   for each of the first num_score_approximations samples:
//     for j in [0, 100):  v ~ Rademacher over every graph output,
//       g = d(sum(v . output)) / d(W) for every entry kernel W,
//       h_j[c] = sum over the non-output-channel axes of g^2,
//       running mean of h_j; after iteration 10, stop once every kernel's
//       mean changed by less than 1e-3 relative;
//   traces = mean over samples.
// One backward pass gives all kernels' gradients (MCT's f_v is the same for
// every node). Samples run in parallel; each has its own fixed-seed random
// stream and slot, merged in sample order (deterministic).
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/gradient_graph.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pruning/importance.h"
#include "core/util/status_macros.h"

namespace quantd::pruning {
namespace {

constexpr int kDefaultScoreApproximations = 32;  // MCT's PRUNING_NUM_...
constexpr int kIterations = 100;                 // HESSIAN_NUM_ITERATIONS
constexpr int kMinIterations = 10;               // MIN_HESSIAN_ITER
constexpr double kTolerance = 1e-3;              // HESSIAN_COMP_TOLERANCE

// sum over every axis but `axis` of g^2.
std::vector<double> SquaredPerChannel(const Tensor& g, int axis) {
  const int64_t channels = g.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < g.rank(); ++d) inner *= g.dim(d);
  const int64_t outer = g.num_elements() / (channels * inner);
  std::vector<double> out(channels, 0.0);
  const float* p = g.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* q = p + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) out[c] += double{q[i]} * q[i];
    }
  }
  return out;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

class LfhMetric : public ImportanceMetric {
 public:
  std::string Name() const override { return "lfh"; }

  absl::StatusOr<std::vector<std::vector<double>>> HessianTraces(
      const Model& model, const std::vector<PruningSection>& sections,
      const std::vector<SampleFeeds>& samples,
      const ImportanceContext& context) const override {
    autodiff::GradientOptions options;
    for (const PruningSection& s : sections) {
      options.initializers.push_back(s.entry_kernel.initializer);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<autodiff::GradientGraph> graph,
                     autodiff::GradientGraph::Create(
                         std::make_shared<const Model>(model), options));
    const int wanted = context.num_score_approximations > 0
                           ? context.num_score_approximations
                           : kDefaultScoreApproximations;
    const int n = std::min<int>(wanted, static_cast<int>(samples.size()));
    std::vector<std::vector<std::vector<double>>> per_sample(n);
    SampleProgress progress;
    progress.sink = context.progress;
    progress.stage = "importance";
    progress.message = [](int64_t done, int64_t total) {
      return absl::StrCat("LFH: ", done, "/", total, " samples");
    };
    RETURN_IF_ERROR(ParallelForSamples(
        n, context.pool, context.cancel, progress, [&](int64_t i) {
          absl::StatusOr<std::vector<std::vector<double>>> t =
              SampleTraces(*graph, sections, samples[i], i, context.cancel);
          if (!t.ok()) return t.status();
          per_sample[i] = *std::move(t);
          return absl::OkStatus();
        }));
    std::vector<std::vector<double>> traces(sections.size());
    for (size_t s = 0; s < sections.size(); ++s) {
      traces[s].assign(sections[s].channels, 0.0);
      for (int i = 0; i < n; ++i) {
        for (int64_t c = 0; c < sections[s].channels; ++c) {
          traces[s][c] += per_sample[i][s][c] / n;
        }
      }
    }
    return traces;
  }

 private:
  static absl::StatusOr<std::vector<std::vector<double>>> SampleTraces(
      const autodiff::GradientGraph& graph,
      const std::vector<PruningSection>& sections, const SampleFeeds& feeds,
      int64_t index, const CancellationToken* cancel) {
    ASSIGN_OR_RETURN(autodiff::Tape tape, graph.Forward(feeds, cancel));
    std::vector<std::string> outputs;
    for (const ValueInfo& o : graph.model().graph.outputs) {
      auto it = tape.values.find(o.name);
      if (it != tape.values.end() && it->second.dtype() == DType::kFloat &&
          graph.IsDifferentiable(o.name)) {
        outputs.push_back(o.name);
      }
    }
    if (outputs.empty()) {
      return absl::FailedPreconditionError(
          "LFH: no float graph output depends on the prunable layers");
    }
    std::mt19937_64 rng(0x5eed0000ULL + static_cast<uint64_t>(index));
    std::vector<std::vector<double>> mean(sections.size());
    for (size_t s = 0; s < sections.size(); ++s) {
      mean[s].assign(sections[s].channels, 0.0);
    }
    std::vector<double> previous;
    for (int j = 0; j < kIterations; ++j) {
      std::map<std::string, Tensor> seeds;
      for (const std::string& name : outputs) {
        const Tensor& out = tape.values.at(name);
        Tensor v(DType::kFloat, out.shape());
        // f_v = mean over the batch of sum(v * output) (MCT).
        const float scale =
            out.rank() > 0 && out.dim(0) > 0 ? 1.f / out.dim(0) : 1.f;
        for (float& x : v.mutable_span<float>()) {
          x = (rng() & 1) != 0 ? scale : -scale;
        }
        seeds.emplace(name, std::move(v));
      }
      ASSIGN_OR_RETURN(autodiff::Gradients g,
                       graph.Backward(tape, seeds, cancel));
      std::vector<double> now;
      for (size_t s = 0; s < sections.size(); ++s) {
        const ChannelTensor& k = sections[s].entry_kernel;
        const std::vector<double> h =
            SquaredPerChannel(g.initializers.at(k.initializer), k.axis);
        for (size_t c = 0; c < h.size(); ++c) {
          mean[s][c] = (j * mean[s][c] + h[c]) / (j + 1);
        }
        now.push_back(Mean(mean[s]));
      }
      if (j > kMinIterations && !previous.empty()) {
        double worst = 0;
        for (size_t s = 0; s < now.size(); ++s) {
          worst = std::max(worst, std::fabs(now[s] - previous[s]) /
                                      (std::fabs(now[s]) + 1e-6));
        }
        if (worst < kTolerance) break;
      }
      previous = std::move(now);
    }
    return mean;
  }
};

}  // namespace

std::unique_ptr<ImportanceMetric> MakeLfhMetric() {
  return std::make_unique<LfhMetric>();
}

}  // namespace quantd::pruning
