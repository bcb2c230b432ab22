#include "core/datagen/generate_job.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/datagen/statistics_json.h"
#include "core/runtime/stage_names.h"
#include "core/util/request_checks.h"
#include "core/util/status_macros.h"

namespace quantd::datagen {

absl::StatusOr<DataGenOptions> DataGenOptionsFromRequest(
    const v1::GenerateDataRequest& r) {
  DataGenOptions o;
  o.count = r.count();
  if (r.iterations() != 0) o.iterations = r.iterations();
  if (r.batch_size() != 0) o.batch_size = r.batch_size();
  if (r.learning_rate() != 0) o.learning_rate = r.learning_rate();
  if (r.has_extra_pixels()) o.extra_pixels = r.extra_pixels();
  o.seed = r.seed();
  o.shape.assign(r.shape().begin(), r.shape().end());
  o.input_min.assign(r.input_min().begin(), r.input_min().end());
  o.input_max.assign(r.input_max().begin(), r.input_max().end());
  if (!r.statistics_json().empty()) {
    auto stats = ParseStatisticsJson(r.statistics_json());
    if (!stats.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("statistics_json: ", stats.status().message()));
    }
    o.statistics = *std::move(stats);
  }
  return o;
}

absl::Status ValidateGenerateDataRequest(const v1::GenerateDataRequest& r,
                                         int64_t max_count) {
  RETURN_IF_ERROR(CheckRequestId(r.request_id()));
  RETURN_IF_ERROR(CheckEnumsAndNumbers(r));
  if (r.count() > max_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "count: ", r.count(), " images exceed the limit of ", max_count));
  }
  if (r.shape_size() != 0 && r.shape_size() != 3 && r.shape_size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape: ", r.shape_size(),
                     " dims; expected [C, H, W] or [N, C, H, W]"));
  }
  for (int64_t d : r.shape()) {
    if (d <= 0 || d > 16384) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape: dim ", d, " is not in [1, 16384]"));
    }
  }
  ASSIGN_OR_RETURN(DataGenOptions o, DataGenOptionsFromRequest(r));
  return ValidateDataGenOptions(o);
}

absl::StatusOr<GeneratedData> RunGenerateDataJob(
    const v1::GenerateDataRequest& request, const GenerateJobContext& c) {
  RETURN_IF_ERROR(ValidateGenerateDataRequest(request, c.max_count));
  ASSIGN_OR_RETURN(DataGenOptions options, DataGenOptionsFromRequest(request));
  if (c.run.progress != nullptr)
    c.run.progress->Report({stage::kImport, 0, ""});
  const absl::string_view bytes = c.model_bytes.empty()
                                      ? absl::string_view(request.onnx_model())
                                      : c.model_bytes;
  ASSIGN_OR_RETURN(Model model, ImportOnnx(bytes, c.import));
  // The image input first: a shape that contradicts the model is named as
  // such, not refused by admission for the memory it would take.
  std::string input_name;
  RETURN_IF_ERROR(InputGeometry(model.graph, options, &input_name).status());
  if (c.on_import) RETURN_IF_ERROR(c.on_import(model, options));
  if (c.run.cancel != nullptr) RETURN_IF_ERROR(c.run.cancel->Check());
  return GenerateData(std::make_shared<const Model>(std::move(model)), options,
                      c.run);
}

}  // namespace quantd::datagen
