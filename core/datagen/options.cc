#include "core/datagen/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace quantd::datagen {

absl::Status ValidateDataGenOptions(const DataGenOptions& o) {
  auto positive = [](const char* name, int64_t v, int64_t max) {
    if (v <= 0 || v > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be in [1, ", max, "], got ", v));
    }
    return absl::OkStatus();
  };
  absl::Status s = positive("count", o.count, 1'000'000);
  if (s.ok()) s = positive("iterations", o.iterations, 1'000'000);
  if (s.ok()) s = positive("batch_size", o.batch_size, 4096);
  if (!s.ok()) return s;
  // Adam's steps scale with the rate: beyond kMaxLearningRate the images
  // overflow to Inf/NaN within a few iterations.
  if (!(o.learning_rate > 0 && o.learning_rate <= kMaxLearningRate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning_rate must be in (0, ", kMaxLearningRate,
                     "], got ", o.learning_rate));
  }
  if (o.extra_pixels < 0 || o.extra_pixels > 4096) {
    return absl::InvalidArgumentError("extra_pixels must be in [0, 4096]");
  }
  if (o.input_min.size() != o.input_max.size()) {
    return absl::InvalidArgumentError(
        "input_min and input_max need the same number of values");
  }
  for (size_t c = 0; c < o.input_min.size(); ++c) {
    if (!std::isfinite(o.input_min[c]) || !std::isfinite(o.input_max[c])) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_min, input_max: channel ", c, " is not finite (",
                       o.input_min[c], ", ", o.input_max[c], ")"));
    }
    if (!(o.input_min[c] < o.input_max[c])) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_min, input_max: the range of channel ", c,
                       " is empty (min must be below max)"));
    }
  }
  for (const auto& [name, st] : o.statistics) {
    if (st.mean.empty() || st.mean.size() != st.std.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("statistics of '", name,
                       "': mean and std need one value per "
                       "channel"));
    }
    for (float v : st.std) {
      if (!(v >= 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("statistics of '", name, "': negative std"));
      }
    }
    for (const std::vector<float>* values : {&st.mean, &st.std}) {
      for (float v : *values) {
        if (!std::isfinite(v)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "statistics of '", name, "': ", v, " is not a finite value"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd::datagen
