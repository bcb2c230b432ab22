#include "core/datagen/calib_spec.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/status_macros.h"

namespace quantd::datagen {
namespace {

absl::Status Bad(absl::string_view part, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--calib generated: '", part, "': ", why));
}

}  // namespace

bool IsGeneratedCalibSpec(const std::string& calib) {
  return absl::StartsWith(calib, kGeneratedCalibPrefix);
}

absl::StatusOr<DataGenOptions> ParseGeneratedCalibSpec(
    const std::string& calib) {
  DataGenOptions o;
  const std::string body = calib.substr(sizeof(kGeneratedCalibPrefix) - 1);
  std::vector<std::string> parts = absl::StrSplit(body, ',');
  if (!absl::SimpleAtoi(parts[0], &o.count)) {
    return Bad(parts[0], "expected the number of images");
  }
  o.batch_size = std::min<int64_t>(o.count, o.batch_size);
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::vector<std::string> kv = absl::StrSplit(parts[i], '=');
    if (kv.size() != 2) return Bad(parts[i], "expected KEY=VALUE");
    const std::string& key = kv[0];
    const std::string& v = kv[1];
    bool ok = true;
    if (key == "shape") {
      for (absl::string_view d : absl::StrSplit(v, 'x')) {
        int64_t n = 0;
        ok = ok && absl::SimpleAtoi(d, &n);
        o.shape.push_back(n);
      }
    } else if (key == "range") {
      const std::vector<std::string> r = absl::StrSplit(v, ':');
      float lo = 0, hi = 0;
      ok = r.size() == 2 && absl::SimpleAtof(r[0], &lo) &&
           absl::SimpleAtof(r[1], &hi);
      o.input_min = {lo};
      o.input_max = {hi};
    } else if (key == "iterations") {
      ok = absl::SimpleAtoi(v, &o.iterations);
    } else if (key == "batch") {
      ok = absl::SimpleAtoi(v, &o.batch_size);
    } else if (key == "lr") {
      ok = absl::SimpleAtod(v, &o.learning_rate);
    } else if (key == "seed") {
      ok = absl::SimpleAtoi(v, &o.seed);
    } else {
      return Bad(parts[i],
                 "unknown key (shape, range, iterations, batch, lr, seed)");
    }
    if (!ok) return Bad(parts[i], "bad value");
  }
  RETURN_IF_ERROR(ValidateDataGenOptions(o));
  return o;
}

}  // namespace quantd::datagen
