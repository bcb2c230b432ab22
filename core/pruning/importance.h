// Channel importance (MCT's BaseImportanceMetric / LFHImportanceMetric).
//
// MCT scores a channel group g of an entry layer as
//   score(g) = sum_{c in g} Tr(H_c) * ||W_g||^2 / |W_g|
// where Tr(H_c) is the trace of the Hessian of the model output with respect
// to the weights of output channel c (LFH: the label-free Hessian, estimated
// with Hutchinson's method), ||W_g||^2 the squared L2 norm of the group's
// weights and |W_g| their count. A metric supplies the per-channel traces;
// channel_groups.h combines them with the weights.
#ifndef QUANTD_CORE_PRUNING_IMPORTANCE_H_
#define QUANTD_CORE_PRUNING_IMPORTANCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/samples.h"
#include "core/pruning/pruning_section.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd::pruning {

struct ImportanceContext {
  ThreadPool* pool = nullptr;  // samples run in parallel on it
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;
  // MCT's PruningConfig.num_score_approximations: how many samples (the
  // first ones) LFH averages over; 0 = MCT's 32.
  int num_score_approximations = 0;
};

class ImportanceMetric {
 public:
  virtual ~ImportanceMetric() = default;
  // The name the report and docs/pruning.md use.
  virtual std::string Name() const = 0;
  // One non-negative estimate of Tr(H_c) per entry output channel, per
  // section.
  virtual absl::StatusOr<std::vector<std::vector<double>>> HessianTraces(
      const Model& model, const std::vector<PruningSection>& sections,
      const std::vector<SampleFeeds>& samples,
      const ImportanceContext& context) const = 0;
};

// "lfh" (MCT's default): Hutchinson estimates of the Hessian traces of the
// model output with respect to each entry kernel's output channels
// (lfh_importance.cc).
std::unique_ptr<ImportanceMetric> MakeLfhMetric();

// "magnitude": every trace 1, so a group scores its squared L2 norm per
// weight. Data-free and fast; not LFH (docs/pruning.md compares them).
std::unique_ptr<ImportanceMetric> MakeMagnitudeMetric();

// By name: "" or "lfh", "magnitude". An unknown name is INVALID_ARGUMENT
// listing the known ones.
absl::StatusOr<std::unique_ptr<ImportanceMetric>> MakeImportanceMetric(
    const std::string& name);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_IMPORTANCE_H_
