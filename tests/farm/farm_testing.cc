#include "tests/farm/farm_testing.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/graph/onnx_export.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/util/status_macros.h"
#include "tests/integration/server_process.h"
#include "tests/testing/example_model.h"

namespace quantd::testing {

absl::StatusOr<std::string> WriteFarmManifest(const std::string& dir, int sets,
                                              int images) {
  ASSIGN_OR_RETURN(std::string model, ExportOnnx(MakeExampleCnn()));
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/example_cnn.onnx", model));
  std::string manifest;
  for (int k = 1; k <= sets; ++k) {
    const std::string calib = absl::StrCat("calib", k);
    auto samples = MakeExampleImages(images, static_cast<uint64_t>(k));
    for (size_t i = 0; i < samples.size(); ++i) {
      RETURN_IF_ERROR(WriteSample(absl::StrCat(dir, "/", calib),
                                  absl::StrFormat("s%03d", i), samples[i]));
    }
    for (const char* storage : {"uint8", "int8"}) {
      // Relative paths: the runner resolves them against the manifest.
      absl::StrAppend(&manifest, "{\"id\":\"job-", k, "-", storage,
                      "\",\"model\":\"example_cnn.onnx\",\"calib\":\"", calib,
                      "\",\"tpc\":\"imx500@4.0\",\"options\":{"
                      "\"activation_storage\":\"",
                      storage, "\"}}\n");
    }
  }
  const std::string path = dir + "/manifest.jsonl";
  RETURN_IF_ERROR(WriteFileAtomically(path, manifest));
  return path;
}

std::string QuantctlBinary() {
  return BuildDir() + "/clients/quantctl/quantctl";
}

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

std::vector<std::string> FinishedJobs(const std::string& dir) {
  std::vector<std::string> jobs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (std::filesystem::exists(entry.path() / "result.json", ec)) {
      jobs.push_back(name);
    }
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

}  // namespace quantd::testing
