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

namespace quantd::pruning {

class ImportanceMetric {
 public:
  virtual ~ImportanceMetric() = default;
  // The name the report and docs/pruning.md use.
  virtual std::string Name() const = 0;
  // One non-negative estimate of Tr(H_c) per entry output channel, per
  // section.
  virtual absl::StatusOr<std::vector<std::vector<double>>> HessianTraces(
      const Model& model, const std::vector<PruningSection>& sections,
      const std::vector<SampleFeeds>& samples) const = 0;
};

// "magnitude": every trace 1, so a group scores its squared L2 norm per
// weight. Data-free; NOT LFH (docs/pruning.md says why it is the default).
std::unique_ptr<ImportanceMetric> MakeMagnitudeMetric();

// By name: "" or "magnitude". An unknown name is INVALID_ARGUMENT listing
// the known ones; "lfh" is UNIMPLEMENTED until quantd has graph gradients.
absl::StatusOr<std::unique_ptr<ImportanceMetric>> MakeImportanceMetric(
    const std::string& name);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_IMPORTANCE_H_
