// The batch runner itself interrupted (SIGINT, then SIGKILL) and resumed by
// running the same command again: every job ends up done, the jobs finished
// before an interruption are skipped (their outputs untouched, no request
// sent for them again), and nothing half-written is ever visible.
#include <signal.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

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
constexpr int kJobs = 2 * kSets;
constexpr int kImages = 16;

std::string ReadText(const std::string& path) {
  auto text = ReadFileLimited(path, 64 << 20);
  return text.ok() ? *text : "";
}

// Job ids ("<id>" of "<id>/<attempt>") a replica accepted, from log line
// `from` on.
std::multiset<std::string> Accepted(const ServerProcess& server, size_t from) {
  std::multiset<std::string> ids;
  const std::vector<std::string> lines = server.Lines();
  for (size_t i = from; i < lines.size(); ++i) {
    json line = json::parse(lines[i], nullptr, false);
    if (!line.is_object() || line.value("msg", "") != "job accepted") continue;
    const std::string request_id = line["request_id"].get<std::string>();
    ids.insert(request_id.substr(0, request_id.rfind('/')));
  }
  return ids;
}

// Every visible job folder is complete (has its record and its files).
void ExpectOnlyCompleteFolders(const std::string& out) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name[0] == '.') continue;
    SCOPED_TRACE(name);
    const json record =
        json::parse(ReadText(entry.path() / "result.json"), nullptr, false);
    ASSERT_TRUE(record.is_object());
    for (const auto& file : record["files"]) {
      EXPECT_EQ(std::filesystem::file_size(
                    entry.path() / file["name"].get<std::string>(), ec),
                file["bytes"].get<uint64_t>());
    }
  }
}

class FarmResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            absl::StrCat("quantd_farm_resume_", getpid()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto manifest = WriteFarmManifest(dir_, kSets, kImages);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    manifest_ = *manifest;
    for (int i = 0; i < 2; ++i) {
      auto server = ServerProcess::Start({"--workers=1"});
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(*std::move(server));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<std::unique_ptr<Subprocess>> StartBatch() {
    return Subprocess::Start(
        {QuantctlBinary(), "batch", "--manifest", manifest_, "--servers",
         absl::StrJoin({servers_[0]->target(), servers_[1]->target()}, ","),
         "--out", out(), "--concurrency", "2", "--plain"});
  }
  std::string out() const { return dir_ + "/out"; }

  // Records of the finished jobs, by id.
  std::map<std::string, std::string> Records() const {
    std::map<std::string, std::string> records;
    for (const auto& id : FinishedJobs(out())) {
      records[id] = ReadText(absl::StrCat(out(), "/", id, "/result.json"));
    }
    return records;
  }

  // Runs the batch until `done` jobs are finished, then sends `signal`.
  // Returns the exit code (or -signal).
  int InterruptAfter(size_t done, int signal) {
    auto run = StartBatch();
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return -1000;
    EXPECT_TRUE(PollUntil([&] { return FinishedJobs(out()).size() >= done; },
                          absl::Seconds(60)))
        << (*run)->Output();
    (*run)->Signal(signal);
    auto rc = (*run)->Wait(absl::Seconds(60));
    EXPECT_TRUE(rc.ok()) << rc.status();
    last_output_ = (*run)->Output();
    return rc.ok() ? *rc : -1000;
  }

  std::string dir_, manifest_, last_output_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
};

TEST_F(FarmResumeTest, InterruptedRunnerResumesWithNothingLostOrRepeated) {
  // 1. SIGINT: running calls are cancelled, the summary says so, exit 130.
  const int sigint_rc = InterruptAfter(2, SIGINT);
  ASSERT_FALSE(HasFatalFailure());
  std::map<std::string, std::string> before = Records();
  if (before.size() < static_cast<size_t>(kJobs)) {
    EXPECT_EQ(sigint_rc, 130) << last_output_;
    const json summary =
        json::parse(ReadText(out() + "/summary.json"), nullptr, false);
    ASSERT_TRUE(summary.is_object()) << last_output_;
    EXPECT_GT(summary["counts"]["interrupted"].get<int>(), 0);
    EXPECT_EQ(summary["counts"]["ok"].get<int>(),
              static_cast<int>(before.size()));
  }
  ExpectOnlyCompleteFolders(out());

  // 2. Resume, and SIGKILL the runner after a few more jobs: no summary,
  // no cleanup, a lock and maybe a temp folder left behind.
  const int sigkill_rc = InterruptAfter(before.size() + 2, SIGKILL);
  EXPECT_EQ(sigkill_rc, -SIGKILL) << last_output_;
  ExpectOnlyCompleteFolders(out());
  std::map<std::string, std::string> middle = Records();
  for (const auto& [id, record] : before) {
    EXPECT_EQ(middle[id], record) << id << " was redone";
  }

  // 3. Resume to the end.
  std::vector<size_t> log_marks;
  for (const auto& s : servers_) log_marks.push_back(s->Lines().size());
  auto run = StartBatch();
  ASSERT_TRUE(run.ok()) << run.status();
  auto rc = (*run)->Wait(absl::Seconds(120));
  ASSERT_TRUE(rc.ok()) << rc.status() << (*run)->Output();
  EXPECT_EQ(*rc, 0) << (*run)->Output();

  std::map<std::string, std::string> after = Records();
  EXPECT_EQ(after.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, record] : middle) {
    EXPECT_EQ(after[id], record) << id << " was redone";
  }
  const json summary =
      json::parse(ReadText(out() + "/summary.json"), nullptr, false);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["counts"]["skipped"].get<int>(),
            static_cast<int>(middle.size()));
  EXPECT_EQ(summary["counts"]["ok"].get<int>(),
            kJobs - static_cast<int>(middle.size()));
  // The last run asked the replicas only for the jobs not yet done, each
  // once.
  std::multiset<std::string> asked;
  for (size_t i = 0; i < servers_.size(); ++i) {
    for (const auto& id : Accepted(*servers_[i], log_marks[i])) {
      asked.insert(id);
    }
  }
  for (const auto& [id, record] : middle) {
    EXPECT_EQ(asked.count(id), 0u) << id << " was sent again";
  }
  EXPECT_EQ(asked.size(), static_cast<size_t>(kJobs) - middle.size());
  for (const auto& id : asked) EXPECT_EQ(asked.count(id), 1u) << id;
  // No temp folders survive a completed run.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out(), ec)) {
    EXPECT_NE(entry.path().filename().string().rfind(".tmp-", 0), 0u)
        << entry.path();
  }
}

TEST_F(FarmResumeTest, SecondRunnerOnTheSameFolderIsRefused) {
  auto first = StartBatch();
  ASSERT_TRUE(first.ok());
  // The first runner holds the lock from start to exit; wait for its first
  // finished job so that it certainly holds it.
  ASSERT_TRUE(PollUntil([&] { return !FinishedJobs(out()).empty(); },
                        absl::Seconds(60)))
      << (*first)->Output();
  auto second = StartBatch();
  ASSERT_TRUE(second.ok());
  auto rc = (*second)->Wait(absl::Seconds(30));
  ASSERT_TRUE(rc.ok());
  if (FinishedJobs(out()).size() < static_cast<size_t>(kJobs)) {
    EXPECT_EQ(*rc, 1) << (*second)->Output();
    EXPECT_NE((*second)->Output().find("another quantctl batch"),
              std::string::npos)
        << (*second)->Output();
  }
  (*first)->Signal(SIGKILL);
  (void)(*first)->Wait(absl::Seconds(30));
}

}  // namespace
}  // namespace quantd::testing
