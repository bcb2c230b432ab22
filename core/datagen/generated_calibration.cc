#include "core/datagen/generated_calibration.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/datagen/generate_job.h"
#include "core/util/status_macros.h"

namespace quantd::datagen {
namespace {

constexpr char kField[] = "generated_calibration.";

// The same options as a GenerateData request, whose checks apply as they are.
v1::GenerateDataRequest AsGenerateDataRequest(
    const v1::GeneratedCalibration& g) {
  v1::GenerateDataRequest r;
  r.set_count(g.count());
  *r.mutable_shape() = g.shape();
  *r.mutable_input_min() = g.input_min();
  *r.mutable_input_max() = g.input_max();
  r.set_iterations(g.iterations());
  r.set_batch_size(g.batch_size());
  r.set_learning_rate(g.learning_rate());
  r.set_seed(g.seed());
  if (g.has_extra_pixels()) r.set_extra_pixels(g.extra_pixels());
  r.set_statistics_json(g.statistics_json());
  return r;
}

// The status with its field under generated_calibration.
absl::Status UnderGeneratedCalibration(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(kField, status.message()));
}

}  // namespace

absl::Status ValidateGeneratedCalibration(const v1::GeneratedCalibration& g,
                                          int64_t max_count) {
  if (g.count() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField, "count: must be at least 1 image, got ", g.count()));
  }
  if (g.iterations() < 0 || g.batch_size() < 0 || g.learning_rate() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField,
                     g.iterations() < 0   ? "iterations"
                     : g.batch_size() < 0 ? "batch_size"
                                          : "learning_rate",
                     ": must not be negative (0 takes the default)"));
  }
  return UnderGeneratedCalibration(
      ValidateGenerateDataRequest(AsGenerateDataRequest(g), max_count));
}

absl::StatusOr<DataGenOptions> DataGenOptionsFromGeneratedCalibration(
    const v1::GeneratedCalibration& g) {
  auto options = DataGenOptionsFromRequest(AsGenerateDataRequest(g));
  if (!options.ok()) return UnderGeneratedCalibration(options.status());
  if (g.batch_size() == 0) {
    options->batch_size = std::min<int64_t>(options->count, 32);
  }
  return options;
}

v1::GeneratedCalibration GeneratedCalibrationFromOptions(
    const DataGenOptions& o) {
  v1::GeneratedCalibration g;
  g.set_count(o.count);
  g.mutable_shape()->Add(o.shape.begin(), o.shape.end());
  g.mutable_input_min()->Add(o.input_min.begin(), o.input_min.end());
  g.mutable_input_max()->Add(o.input_max.begin(), o.input_max.end());
  g.set_iterations(o.iterations);
  g.set_batch_size(o.batch_size);
  g.set_learning_rate(o.learning_rate);
  g.set_seed(o.seed);
  g.set_extra_pixels(o.extra_pixels);
  return g;
}

}  // namespace quantd::datagen
