// Farm throughput: the same batch (the example CNN, 2 jobs per calibration
// set) run by `quantctl batch` over 1, 2 and 3 local quantd replicas
// (--workers=1 each, concurrency 2 per replica), in jobs/minute and as a
// ratio to 1 replica. Real processes and the real runner, so the figure
// includes process, gRPC and output-writing overheads. On a machine with
// fewer free cores than replicas the ratio is bounded by the cores.
//
//   farm_bench [--jobs=N] [--images=N] [--replicas=MAX]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "tests/farm/farm_testing.h"
#include "tests/integration/server_process.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

int Flag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::atoi(argv[i] + prefix.size());
    }
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const int jobs = std::max(2, Flag(argc, argv, "jobs", 24));
  const int images = Flag(argc, argv, "images", 16);
  const int max_replicas = std::clamp(Flag(argc, argv, "replicas", 3), 1, 8);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("quantd_farm_bench_", getpid()))
                              .string();
  std::filesystem::remove_all(dir);
  auto manifest = WriteFarmManifest(dir, (jobs + 1) / 2, images);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", manifest.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "farm: %d jobs (example CNN, %d calibration images each), "
      "--workers=1 per replica, concurrency 2 per replica\n",
      (jobs + 1) / 2 * 2, images);
  double base = 0;
  for (int replicas = 1; replicas <= max_replicas; ++replicas) {
    std::vector<std::unique_ptr<ServerProcess>> servers;
    std::vector<std::string> targets;
    for (int i = 0; i < replicas; ++i) {
      auto server = ServerProcess::Start({"--workers=1"});
      if (!server.ok()) {
        std::fprintf(stderr, "start: %s\n", server.status().ToString().c_str());
        return 1;
      }
      targets.push_back((*server)->target());
      servers.push_back(*std::move(server));
    }
    const std::string out = absl::StrCat(dir, "/out", replicas);
    const absl::Time start = absl::Now();
    auto run = Subprocess::Start(
        {QuantctlBinary(), "batch", "--manifest", *manifest, "--servers",
         absl::StrJoin(targets, ","), "--out", out, "--concurrency",
         std::to_string(2 * replicas), "--plain"});
    if (!run.ok()) {
      std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
      return 1;
    }
    auto rc = (*run)->Wait(absl::Minutes(30));
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (!rc.ok() || *rc != 0) {
      std::fprintf(stderr, "batch failed:\n%s\n", (*run)->Output().c_str());
      return 1;
    }
    const int done = static_cast<int>(FinishedJobs(out).size());
    const double per_minute = done * 60.0 / seconds;
    if (replicas == 1) base = per_minute;
    std::printf(
        "  %d replica(s): %7.1f jobs/minute (%d jobs in %.2f s), "
        "%.2fx of 1 replica\n",
        replicas, per_minute, done, seconds, per_minute / base);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace quantd::testing

int main(int argc, char** argv) { return quantd::testing::Main(argc, argv); }
