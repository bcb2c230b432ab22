#include "core/pipeline/ptq/hessian_scores.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace quantd {

bool NeedsHessianScores(const PtqOptions& options) {
  return options.weights_error_method == quantizers::ErrorMethod::kHmse &&
         options.hessian_scores == nullptr;
}

std::vector<std::string> HmseKernels(const JobState& state) {
  const Graph& g = state.model.graph;
  std::vector<std::string> kernels;
  std::set<std::string> seen;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const WeightSlot& slot : state.plans[i].weights) {
      if (slot.attr != kHmseAttr) continue;
      const std::string& name = g.nodes[i].Input(slot.input_index);
      const Tensor* t = g.FindInitializer(name);
      if (t == nullptr || t->dtype() != DType::kFloat) continue;
      if (seen.insert(name).second) kernels.push_back(name);
    }
  }
  return kernels;
}

absl::StatusOr<std::shared_ptr<const hessian::HessianScores>>
ComputeHessianScores(const JobState& state,
                     const std::vector<SampleFeeds>& calibration,
                     ThreadPool* pool, const CancellationToken* cancel,
                     ProgressSink* progress, const std::string& stage) {
  hessian::WeightsHessianOptions options;
  options.pool = pool;
  options.cancel = cancel;
  options.progress = progress;
  options.stage = stage;
  auto scores = hessian::ComputeHmseScores(state.model, HmseKernels(state),
                                           calibration, options);
  if (!scores.ok()) {
    return absl::Status(
        scores.status().code(),
        absl::StrCat("weights_error_method HMSE: ", scores.status().message()));
  }
  return std::make_shared<const hessian::HessianScores>(*std::move(scores));
}

}  // namespace quantd
