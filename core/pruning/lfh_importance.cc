// LFH (MCT's LFHImportanceMetric + HessianInfoService, weights mode, per
// output channel): for each of the first num_score_approximations samples,
// core/hessian's Hutchinson estimate of every entry kernel's per-channel
// Hessian trace (hutchinson.h: 100 iterations at most, stop after iteration
// 10 once every kernel's mean changed by less than 1e-3 relative); traces =
// mean over samples. One backward pass gives all kernels' gradients (MCT's
// f_v is the same for every node). Samples run in parallel; each has its own
// fixed-seed random stream and slot, merged in sample order (deterministic).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/gradient_graph.h"
#include "core/hessian/hutchinson.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/pruning/importance.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd::pruning {
namespace {

constexpr int kDefaultScoreApproximations = 32;  // MCT's PRUNING_NUM_...

class LfhMetric : public ImportanceMetric {
 public:
  std::string Name() const override { return "lfh"; }

  absl::StatusOr<std::vector<std::vector<double>>> HessianTraces(
      const Model& model, const std::vector<PruningSection>& sections,
      const std::vector<SampleFeeds>& samples,
      const ImportanceContext& context) const override {
    autodiff::GradientOptions options;
    options.input_gradients = false;
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
    progress.stage = stage::kImportance;
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
    std::vector<hessian::KernelTarget> targets;
    for (const PruningSection& s : sections) {
      targets.push_back(
          {s.entry_kernel.initializer, static_cast<int>(s.entry_kernel.axis)});
    }
    hessian::HutchinsonOptions options;
    options.granularity = hessian::Granularity::kPerOutputChannel;
    auto traces = hessian::EstimateForSample(
        graph, feeds, targets, options,
        0x5eed0000ULL + static_cast<uint64_t>(index), cancel);
    if (!traces.ok() &&
        traces.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::FailedPreconditionError(
          "LFH: no float graph output depends on the prunable layers");
    }
    return traces;
  }
};

}  // namespace

std::unique_ptr<ImportanceMetric> MakeLfhMetric() {
  return std::make_unique<LfhMetric>();
}

}  // namespace quantd::pruning
