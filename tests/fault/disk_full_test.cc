// quantctl writing its outputs onto a full disk (docs/reliability.md): the
// child runs with RLIMIT_FSIZE (SIGXFSZ ignored), so any write past the limit
// fails with EFBIG exactly as on a full file system, without root or tmpfs.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

namespace fs = std::filesystem;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat(
               "quantd_disk_full_", getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "calib");
    const absl::Status written =
        WriteJobFiles(SmallJob("disk-full"), dir_.string());
    ASSERT_TRUE(written.ok()) << written;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // quantctl quantize in-process, files limited to `max_file_bytes`.
  int RunQuantctl(int64_t max_file_bytes, std::string* output) {
    auto child = Subprocess::Start(
        {BuildPath("clients/quantctl/quantctl"), "quantize",
         (dir_ / "model.onnx").string(), "--tpc", "imx500@4", "--calib",
         (dir_ / "calib").string(), "--out", (dir_ / "out").string(), "--quiet",
         "--threads", "1"},
        {.max_file_bytes = max_file_bytes});
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return -1;
    while ((*child)->ReadLine().has_value()) {
    }
    *output = absl::StrJoin((*child)->Lines(), "\n");
    const absl::StatusOr<int> code = (*child)->Wait();
    EXPECT_TRUE(code.ok()) << code.status();
    return code.ok() ? *code : -1;
  }

  fs::path dir_;
};

TEST_F(DiskFullTest, FailsWithTheFileNamedAndLeavesNoPartialOutput) {
  std::string output;
  // 1 KiB: smaller than every output file (the QDQ model, the reports).
  const int code = RunQuantctl(1024, &output);
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find((dir_ / "out").string()), std::string::npos) << output;
  // Outputs are written atomically: nothing truncated under a final name,
  // no temporary file left behind.
  if (fs::exists(dir_ / "out")) {
    for (const auto& entry : fs::directory_iterator(dir_ / "out")) {
      ADD_FAILURE() << "left behind: " << entry.path() << " ("
                    << entry.file_size() << " bytes)";
    }
  }
}

TEST_F(DiskFullTest, SameCommandSucceedsWithRoom) {
  std::string output;
  EXPECT_EQ(RunQuantctl(int64_t{1} << 30, &output), 0) << output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.qdq.onnx")) << output;
}

}  // namespace
}  // namespace quantd::testing
