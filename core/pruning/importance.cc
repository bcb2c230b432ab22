#include "core/pruning/importance.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace quantd::pruning {
namespace {

class MagnitudeMetric : public ImportanceMetric {
 public:
  std::string Name() const override { return "magnitude"; }
  absl::StatusOr<std::vector<std::vector<double>>> HessianTraces(
      const Model& /*model*/, const std::vector<PruningSection>& sections,
      const std::vector<SampleFeeds>& /*samples*/,
      const ImportanceContext& /*context*/) const override {
    std::vector<std::vector<double>> traces;
    for (const PruningSection& s : sections) {
      traces.emplace_back(static_cast<size_t>(s.channels), 1.0);
    }
    return traces;
  }
};

}  // namespace

std::unique_ptr<ImportanceMetric> MakeMagnitudeMetric() {
  return std::make_unique<MagnitudeMetric>();
}

absl::StatusOr<std::unique_ptr<ImportanceMetric>> MakeImportanceMetric(
    const std::string& name) {
  if (name.empty() || name == "lfh") return MakeLfhMetric();
  if (name == "magnitude") return MakeMagnitudeMetric();
  return absl::InvalidArgumentError(absl::StrCat(
      "importance_metric '", name, "': unknown (known: lfh, magnitude)"));
}

}  // namespace quantd::pruning
