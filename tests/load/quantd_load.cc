// quantd_load: the load test as a tool, for runs longer than CI's.
//   quantd_load [--streams=N] [--jobs_per_stream=N] [--large=N]
//               [--workers=N] [--max_queued_jobs=N] [--model=FILE.onnx
//               --samples=DIR --input=NAME]
// Starts <build>/server/quantd (port 0) with the given workers and queue,
// runs the load and prints the report. Exit 1 when an accepted job did not
// complete or a call failed other than by a clean rejection.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/samples.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"
#include "tests/load/load_runner.h"

namespace {

std::string Flag(int argc, char** argv, const std::string& name,
                 const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], prefix)) return argv[i] + prefix.size();
  }
  return fallback;
}

int IntFlag(int argc, char** argv, const std::string& name, int fallback) {
  int value = fallback;
  const std::string text = Flag(argc, argv, name, "");
  if (!text.empty() && !absl::SimpleAtoi(text, &value)) {
    std::fprintf(stderr, "--%s: not an integer: %s\n", name.c_str(),
                 text.c_str());
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace quantd;  // NOLINT: a small tool
  load::LoadSpec spec;
  spec.streams = IntFlag(argc, argv, "streams", 32);
  spec.jobs_per_stream = IntFlag(argc, argv, "jobs_per_stream", 8);
  spec.small_job = testing::SmallJob("small");
  const std::string model = Flag(argc, argv, "model", "");
  v1::QuantizeRequest large = testing::ConvJob(8, 96, 64, 8, "large");
  if (!model.empty()) {
    auto bytes = ReadFileLimited(model, int64_t{1} << 31);
    auto samples = ReadSampleSet(Flag(argc, argv, "samples", ""),
                                 {Flag(argc, argv, "input", "x")});
    if (!bytes.ok() || !samples.ok()) {
      std::fprintf(
          stderr, "%s\n",
          (!bytes.ok() ? bytes.status() : samples.status()).ToString().c_str());
      return 2;
    }
    large = testing::SmallJob("large");
    large.clear_calibration_samples();
    large.set_onnx_model(*bytes);
    for (const auto& sample : samples->samples) {
      v1::Sample* out = large.add_calibration_samples();
      for (const auto& [name, tensor] : sample) {
        *out->add_inputs() = TensorToSampleProto(tensor, name);
      }
    }
  }
  for (int i = 0; i < IntFlag(argc, argv, "large", 2); ++i) {
    spec.large_jobs.push_back(large);
    spec.large_jobs.back().set_request_id(absl::StrCat("large-", i));
  }
  auto server = testing::ServerProcess::Start(
      {absl::StrCat("--workers=", IntFlag(argc, argv, "workers", 2)),
       absl::StrCat("--max_queued_jobs=",
                    IntFlag(argc, argv, "max_queued_jobs", 4))});
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 2;
  }
  auto pid = load::FindChild("quantd");
  if (!pid.ok()) {
    std::fprintf(stderr, "%s\n", pid.status().ToString().c_str());
    return 2;
  }
  auto report = load::RunLoad((*server)->target(), *pid, spec);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 2;
  }
  std::printf("%s\n", report->ToString().c_str());
  (*server)->Signal(SIGTERM);
  (void)(*server)->WaitExit();
  return report->failures.empty() && report->completed == report->accepted ? 0
                                                                           : 1;
}
