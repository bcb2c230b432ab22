// Batch manifests for `quantctl batch` (docs/farm.md): one job per line,
// as JSON lines
//
//   {"id": "mnv2-imx", "model": "models/mnv2.onnx", "calib": "calib/",
//    "heldout": "eval/", "tpc": "imx500@4.0",
//    "options": {"weights_bits": 4, "activation_storage": "int8",
//                "mp": "weights=0.75", "gptq": false, "threads": 2}}
//
// or CSV with a header naming the same columns (options as their own
// columns). The options are the job options of `quantctl quantize`
// (job_options.h), keys in snake_case (or kebab-case). Relative
// paths are taken from the manifest's folder. Blank lines and lines that
// start with '#' are skipped. Every error names the line and the field.
#ifndef QUANTD_CLIENTS_BATCH_MANIFEST_H_
#define QUANTD_CLIENTS_BATCH_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/batch/job_files.h"

namespace quantd::batch {

struct BatchJob {
  // The output folder's name: [A-Za-z0-9_.-]{1,100}, not starting with '.'.
  // Default: "<model file stem>-<line>".
  std::string id;
  int line = 0;  // 1-based line in the manifest
  JobFiles files;
};

enum class ManifestFormat { kAuto, kJsonLines, kCsv };

// Reads and validates a manifest file. kAuto picks by extension (.csv;
// .jsonl/.ndjson/.json) and else by the first non-blank line ('{' = JSON).
absl::StatusOr<std::vector<BatchJob>> ReadManifest(
    const std::string& path, ManifestFormat format = ManifestFormat::kAuto);

// `text` as the manifest `name` (used in messages) whose relative paths are
// resolved against `base_dir`.
absl::StatusOr<std::vector<BatchJob>> ParseManifest(const std::string& text,
                                                    const std::string& name,
                                                    const std::string& base_dir,
                                                    ManifestFormat format);

// True for a valid job id (see BatchJob::id).
bool IsValidJobId(const std::string& id);

}  // namespace quantd::batch

#endif  // QUANTD_CLIENTS_BATCH_MANIFEST_H_
