// quantctl batch over three real quantd replicas on loopback, one killed
// with SIGKILL and one stopped with SIGTERM mid-batch: every job completes
// exactly once, with outputs byte-identical to a single-server run.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io/file_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/farm/farm_testing.h"
#include "tests/integration/server_process.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

using nlohmann::json;

constexpr int kSets = 6;  // x 2 storages = 12 jobs
constexpr int kImages = 16;

std::string TempDir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("quantd_farm_", name, "_", getpid()))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

json ReadJson(const std::string& path) {
  auto text = ReadFileLimited(path, 64 << 20);
  if (!text.ok()) return json();
  return json::parse(*text, nullptr, false);
}

std::string ReadBytes(const std::string& path) {
  auto text = ReadFileLimited(path, int64_t{1} << 30);
  return text.ok() ? *text : "<missing " + path + ">";
}

// "job finished" lines with status OK per job id ("<id>/<attempt>" request
// ids), and every request id a replica accepted.
void CountServerJobs(const ServerProcess& server,
                     std::map<std::string, int>* finished_ok,
                     std::vector<std::string>* accepted) {
  for (const auto& text : server.Lines()) {
    json line = json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("request_id")) continue;
    const std::string request_id = line["request_id"].get<std::string>();
    const std::string job = request_id.substr(0, request_id.rfind('/'));
    if (line.value("msg", "") == "job accepted") accepted->push_back(job);
    if (line.value("msg", "") == "job finished" &&
        line.value("status", "") == "OK") {
      ++(*finished_ok)[job];
    }
  }
}

// A replica's first accepted request that it has not finished yet.
bool HasRunningJob(const ServerProcess& server) {
  std::map<std::string, int> open;
  for (const auto& text : server.Lines()) {
    json line = json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("request_id")) continue;
    const std::string id = line["request_id"].get<std::string>();
    if (line.value("msg", "") == "job accepted") ++open[id];
    if (line.value("msg", "") == "job finished") --open[id];
  }
  for (const auto& [id, n] : open) {
    if (n > 0) return true;
  }
  return false;
}

int FinishedCount(const ServerProcess& server) {
  int n = 0;
  for (const auto& text : server.Lines()) {
    n += absl::StrContains(text, "\"job finished\"");
  }
  return n;
}

TEST(FarmReplicasTest, KilledAndDrainedReplicasLoseNoJobAndRepeatNone) {
  const std::string dir = TempDir("replicas");
  auto manifest = WriteFarmManifest(dir, kSets, kImages);
  ASSERT_TRUE(manifest.ok()) << manifest.status();

  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 3; ++i) {
    auto server = ServerProcess::Start({"--workers=1", "--drain_seconds=60"});
    ASSERT_TRUE(server.ok()) << server.status();
    servers.push_back(*std::move(server));
  }
  ServerProcess& killed = *servers[0];
  ServerProcess& drained = *servers[1];
  ServerProcess& survivor = *servers[2];

  // The reference: the whole batch on the survivor alone.
  const std::string reference = dir + "/reference";
  {
    auto run =
        Subprocess::Start({QuantctlBinary(), "batch", "--manifest", *manifest,
                           "--servers", survivor.target(), "--out", reference,
                           "--concurrency", "1", "--plain"});
    ASSERT_TRUE(run.ok()) << run.status();
    auto rc = (*run)->Wait(absl::Seconds(120));
    ASSERT_TRUE(rc.ok()) << rc.status() << (*run)->Output();
    ASSERT_EQ(*rc, 0) << (*run)->Output();
  }

  const std::string out = dir + "/farm";
  auto run = Subprocess::Start(
      {QuantctlBinary(), "batch", "--manifest", *manifest, "--servers",
       absl::StrJoin({killed.target(), drained.target(), survivor.target()},
                     ","),
       "--out", out, "--concurrency", "3", "--retries", "6", "--plain"});
  ASSERT_TRUE(run.ok()) << run.status();
  Subprocess& runner = **run;

  // SIGKILL the first replica while it runs a job; SIGTERM the second once
  // it has finished one job and runs another.
  ASSERT_TRUE(
      PollUntil([&] { return HasRunningJob(killed); }, absl::Seconds(60)))
      << runner.Output();
  killed.Signal(SIGKILL);
  ASSERT_TRUE(PollUntil(
      [&] { return FinishedCount(drained) >= 1 && HasRunningJob(drained); },
      absl::Seconds(60)))
      << runner.Output();
  drained.Signal(SIGTERM);

  auto rc = runner.Wait(absl::Seconds(120));
  ASSERT_TRUE(rc.ok()) << rc.status() << runner.Output();
  EXPECT_EQ(*rc, 0) << runner.Output();
  auto drained_rc = drained.WaitExit(absl::Seconds(60));
  ASSERT_TRUE(drained_rc.ok()) << drained_rc.status();
  EXPECT_EQ(*drained_rc, 0);
  EXPECT_FALSE(killed.WaitExit(absl::Seconds(10)).ok());  // killed: no exit 0

  const json summary = ReadJson(out + "/summary.json");
  ASSERT_TRUE(summary.is_object()) << runner.Output();
  EXPECT_EQ(summary["counts"]["ok"], 2 * kSets) << summary.dump(2);
  EXPECT_EQ(summary["counts"]["failed"], 0);

  // Completed exactly once: one OK finish per job over all replicas (the
  // farm run only; the survivor's reference jobs are counted apart).
  std::map<std::string, int> finished_ok;
  std::vector<std::string> accepted;
  CountServerJobs(killed, &finished_ok, &accepted);
  CountServerJobs(drained, &finished_ok, &accepted);
  std::map<std::string, int> survivor_ok;
  CountServerJobs(survivor, &survivor_ok, &accepted);
  bool retried_after_kill = false;
  for (const auto& job : summary["jobs"]) {
    const std::string id = job["id"];
    SCOPED_TRACE(id);
    EXPECT_EQ(job["status"], "ok");
    // The survivor ran every job once for the reference.
    EXPECT_EQ(finished_ok[id] + survivor_ok[id] - 1, 1) << summary.dump(2);
    // The attempt that succeeded is the one result.json names.
    const json record = ReadJson(absl::StrCat(out, "/", id, "/result.json"));
    EXPECT_EQ(record["request_id"], job["request_id"]);
    const auto& attempts = job["attempt_log"];
    ASSERT_FALSE(attempts.empty());
    EXPECT_EQ(attempts.back()["status"], "OK");
    for (size_t a = 0; a + 1 < attempts.size(); ++a) {
      EXPECT_TRUE(attempts[a]["retryable"].get<bool>()) << attempts.dump();
      // Each retry went to another replica than the failed attempt.
      EXPECT_NE(attempts[a]["replica"], attempts[a + 1]["replica"]);
      if (attempts[a]["replica"] == killed.target()) retried_after_kill = true;
    }
    // Identical to the single-server run, byte for byte.
    const json ref = ReadJson(absl::StrCat(reference, "/", id, "/result.json"));
    EXPECT_EQ(record["result_digest"], ref["result_digest"]);
    EXPECT_EQ(record["input_digest"], ref["input_digest"]);
    for (const char* file :
         {"model.qdq.onnx", "quantized_graph.pb", "quantized_graph.json"}) {
      EXPECT_TRUE(ReadBytes(absl::StrCat(out, "/", id, "/", file)) ==
                  ReadBytes(absl::StrCat(reference, "/", id, "/", file)))
          << file;
    }
  }
  EXPECT_TRUE(retried_after_kill) << summary.dump(2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace quantd::testing
