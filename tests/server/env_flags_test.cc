#include "server/env_flags.h"

#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, env_test_workers, 1, "test flag");
ABSL_FLAG(std::string, env_test_dir, "default", "test flag");
ABSL_FLAG(bool, env_test_verbose, false, "test flag");

namespace quantd::server {
namespace {

using ::testing::UnorderedElementsAre;

class EnvFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_env_test_workers, 1);
    absl::SetFlag(&FLAGS_env_test_dir, "default");
    absl::SetFlag(&FLAGS_env_test_verbose, false);
  }
  EnvLookup Env() {
    return [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }
  std::map<std::string, std::string> env_;
};

TEST(EnvNameForFlagTest, UppercasesWithPrefix) {
  EXPECT_EQ(EnvNameForFlag("max_job_memory_mb"), "QUANTD_MAX_JOB_MEMORY_MB");
}

TEST(FlagsOnCommandLineTest, RecognisesEveryAbslForm) {
  EXPECT_THAT(
      FlagsOnCommandLine({"--a=1", "-b", "2", "--noc", "pos", "--", "--after"}),
      UnorderedElementsAre("a", "b", "noc", "c"));
}

TEST_F(EnvFlagsTest, DefaultWhenNeitherIsSet) {
  ASSERT_TRUE(ApplyEnvironmentToFlags({}, Env()).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_env_test_workers), 1);
  EXPECT_EQ(absl::GetFlag(FLAGS_env_test_dir), "default");
}

TEST_F(EnvFlagsTest, EnvironmentOverridesDefault) {
  env_["QUANTD_ENV_TEST_WORKERS"] = "8";
  env_["QUANTD_ENV_TEST_VERBOSE"] = "true";
  ASSERT_TRUE(ApplyEnvironmentToFlags({}, Env()).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_env_test_workers), 8);
  EXPECT_TRUE(absl::GetFlag(FLAGS_env_test_verbose));
}

TEST_F(EnvFlagsTest, CommandLineWinsOverEnvironment) {
  // As if main() had parsed "--env_test_workers=3" already.
  absl::SetFlag(&FLAGS_env_test_workers, 3);
  env_["QUANTD_ENV_TEST_WORKERS"] = "8";
  env_["QUANTD_ENV_TEST_DIR"] = "/from/env";
  ASSERT_TRUE(ApplyEnvironmentToFlags({"--env_test_workers=3"}, Env()).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_env_test_workers), 3);
  EXPECT_EQ(absl::GetFlag(FLAGS_env_test_dir), "/from/env");
}

TEST_F(EnvFlagsTest, NegatedBoolOnCommandLineWinsOverEnvironment) {
  env_["QUANTD_ENV_TEST_VERBOSE"] = "true";
  ASSERT_TRUE(ApplyEnvironmentToFlags({"--noenv_test_verbose"}, Env()).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_env_test_verbose));
}

TEST_F(EnvFlagsTest, UnparsableValueNamesTheVariable) {
  env_["QUANTD_ENV_TEST_WORKERS"] = "many";
  const absl::Status status = ApplyEnvironmentToFlags({}, Env());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("QUANTD_ENV_TEST_WORKERS=\"many\""));
}

}  // namespace
}  // namespace quantd::server
