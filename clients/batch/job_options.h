// The job options, defined once: `quantctl quantize --NAME VALUE`, a batch
// manifest's "options": {"NAME": VALUE} (snake_case or kebab-case keys) and
// the Python API's keyword arguments all go through this table, so a
// value means the same thing (and fails with the same message) everywhere.
//
//   JobFiles job;
//   RETURN_IF_ERROR(ApplyJobOption("weights-bits", "4", &job));
//   for (const JobOption& o : JobOptions()) PrintHelpLine(o);
#ifndef QUANTD_CLIENTS_BATCH_JOB_OPTIONS_H_
#define QUANTD_CLIENTS_BATCH_JOB_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "clients/batch/job_files.h"

namespace quantd {

struct JobOption {
  std::string name;        // kebab-case, as the flag: "weights-bits"
  std::string value_name;  // "N", "TARGETS"; empty for a switch
  std::string help;        // one line
  // Parses and validates `text` ("true"/"false" for a switch) into `job`.
  // Errors describe the value and do not name the option (callers do).
  absl::Status (*apply)(const std::string& text, JobFiles* job);
  // Also a quantctl flag. generated-calibration is not: quantctl takes
  // `--calib generated:N` (and manifests `"calib": "generated:N"`).
  bool flag = true;
};

const std::vector<JobOption>& JobOptions();

// By name, kebab-case ("weights-bits") or snake_case ("weights_bits");
// nullptr when unknown.
const JobOption* FindJobOption(absl::string_view name);

// The manifest key of an option: its name in snake_case.
std::string JobOptionKey(const JobOption& option);

// FindJobOption + apply; an unknown name is INVALID_ARGUMENT naming it.
absl::Status ApplyJobOption(absl::string_view name, const std::string& text,
                            JobFiles* job);

}  // namespace quantd

#endif  // QUANTD_CLIENTS_BATCH_JOB_OPTIONS_H_
