// The quantctl binary's command line (docs/cli.md): help on every verb,
// --version, errors before any job runs, and docs/cli.md generated from the
// flag tables.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

CliRun Quantctl(std::vector<std::string> args) {
  args.insert(args.begin(), BuildPath("clients/quantctl/quantctl"));
  auto child = Subprocess::Start(args);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {};
  auto code = (*child)->Wait(absl::Seconds(60));
  EXPECT_TRUE(code.ok()) << code.status();
  return {code.ok() ? *code : -1, (*child)->Output()};
}

TEST(QuantctlCliTest, HelpExitsZeroEverywhere) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"-h"},
                                             {"--help"},
                                             {"help"},
                                             {"help", "batch"},
                                             {"quantize", "-h"},
                                             {"batch", "--help"},
                                             {"health", "--help"},
                                             {"infer", "-h"},
                                             {"tpc", "--help"},
                                             {"tpc", "show", "-h"},
                                             {"version", "-h"}}) {
    const CliRun run = Quantctl(args);
    EXPECT_EQ(run.code, 0) << args[0] << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr("usage: quantctl")) << args[0];
  }
}

TEST(QuantctlCliTest, QuantizeHelpListsEveryFlagOnceWithoutOldSpellings) {
  const CliRun run = Quantctl({"quantize", "--help"});
  ASSERT_EQ(run.code, 0) << run.output;
  for (const char* flag :
       {"--tpc ",           "--calib ",        "--out ",
        "--eval ",          "--weights-bits ", "--mp ",
        "--bits-override ", "--keep-float ",   "--activation-storage ",
        "--gptq ",          "--threads ",      "--report-samples ",
        "--config ",        "--export ",       "--force ",
        "--quiet ",         "--server ",       "--tls ",
        "--tls-ca ",        "--tls-cert ",     "--tls-key ",
        "--token-file ",    "--deadline "}) {
    const std::string line = absl::StrCat("\n  ", flag);
    const size_t at = run.output.find(line);
    EXPECT_NE(at, std::string::npos) << flag;
    EXPECT_EQ(run.output.find(line, at + 1), std::string::npos) << flag;
  }
  EXPECT_THAT(run.output, Not(HasSubstr("token_file")));
}

TEST(QuantctlCliTest, VersionNamesTheCommit) {
  for (const char* arg : {"--version", "version"}) {
    const CliRun run = Quantctl({arg});
    EXPECT_EQ(run.code, 0);
    EXPECT_THAT(run.output, ::testing::MatchesRegex(
                                "quantctl [0-9.]+ \\(commit [0-9a-z]+\\)\n"));
  }
}

TEST(QuantctlCliTest, UnknownFlagIsAUsageErrorNamingIt) {
  const CliRun run = Quantctl({"health", "--server=localhost:1", "--colour"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.output, HasSubstr("unknown flag '--colour'"));
}

TEST(QuantctlCliTest, NonEmptyOutFailsBeforeTheJobUnlessForced) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "quantctl_out_check";
  std::filesystem::create_directories(dir / "out");
  std::ofstream(dir / "out" / "keep.txt") << "precious";
  // The model does not exist: a job that ran would fail on it instead.
  const std::vector<std::string> args = {"quantize",
                                         (dir / "missing.onnx").string(),
                                         "--tpc=imx500@4",
                                         "--calib",
                                         (dir / "calib").string(),
                                         "--out",
                                         (dir / "out").string()};
  const CliRun run = Quantctl(args);
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("not empty (--force overwrites"));
  EXPECT_THAT(run.output, Not(HasSubstr("missing.onnx")));

  std::vector<std::string> forced = args;
  forced.push_back("--force");
  const CliRun force_run = Quantctl(forced);
  EXPECT_EQ(force_run.code, 1) << force_run.output;  // now the job fails
  EXPECT_THAT(force_run.output, HasSubstr("missing.onnx"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "keep.txt"));
  std::filesystem::remove_all(dir);
}

// An empty or blank --out would mean the current folder (or "/NAME"):
// every verb refuses it before anything runs, and writes nothing anywhere.
TEST(QuantctlCliTest, EmptyOutIsAUsageErrorOnEveryVerbAndWritesNothing) {
  namespace fs = std::filesystem;
  const fs::path cwd = fs::path(::testing::TempDir()) / "quantctl_empty_out";
  fs::remove_all(cwd);
  fs::create_directories(cwd);
  // What a job would write, and whether the root already has it.
  const std::vector<std::string> outputs = {
      "model.qdq.onnx", "report.json",       "quantized_graph.pb",
      "summary.json",   "model.pruned.onnx", "s0"};
  std::vector<bool> in_root;
  for (const std::string& name : outputs) {
    in_root.push_back(fs::exists(fs::path("/") / name));
  }
  const std::vector<std::vector<std::string>> verbs = {
      {"quantize", "m.onnx", "--tpc", "imx500", "--calib", "c"},
      {"analyze", "m.onnx", "--tpc", "imx500", "--calib", "c"},
      {"generate-data", "m.onnx", "--count", "1"},
      {"infer", "m.onnx", "--inputs", "c"},
      {"prune", "m.onnx", "--weights-memory", "0.5", "--tpc", "imx500",
       "--calib", "c"},
      {"batch", "--manifest", "m.json", "--servers", "localhost:1"},
  };
  for (const std::vector<std::string>& verb : verbs) {
    for (const std::vector<std::string>& out :
         std::vector<std::vector<std::string>>{{"--out="}, {"--out", " "}}) {
      std::vector<std::string> args = verb;
      args.insert(args.begin(), BuildPath("clients/quantctl/quantctl"));
      args.insert(args.end(), out.begin(), out.end());
      auto child = Subprocess::Start(args, {.cwd = cwd.string()});
      ASSERT_TRUE(child.ok()) << child.status();
      auto code = (*child)->Wait(absl::Seconds(60));
      ASSERT_TRUE(code.ok()) << code.status();
      EXPECT_EQ(*code, 2) << verb[0] << "\n" << (*child)->Output();
      EXPECT_THAT((*child)->Output(), HasSubstr("--out: empty value"))
          << verb[0];
    }
  }
  EXPECT_TRUE(fs::is_empty(cwd));
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(fs::exists(fs::path("/") / outputs[i]), in_root[i]) << outputs[i];
  }
  fs::remove_all(cwd);
}

// The last of two values does not silently win.
TEST(QuantctlCliTest, RepeatedFlagsAndTargetsAreUsageErrors) {
  const CliRun twice =
      Quantctl({"quantize", "m.onnx", "--tpc", "imx500", "--calib", "c",
                "--out", "o", "--weights-bits", "4", "--weights-bits=8"});
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_THAT(twice.output,
              HasSubstr("--weights-bits is given more than once"));
  const CliRun targets =
      Quantctl({"quantize", "m.onnx", "--tpc", "imx500", "--calib", "c",
                "--out", "o", "--mp", "weights=0.5,weights=0.9"});
  EXPECT_EQ(targets.code, 2) << targets.output;
  EXPECT_THAT(targets.output, HasSubstr("'weights' is given more than once"));
  const CliRun overrides =
      Quantctl({"quantize", "m.onnx", "--tpc", "imx500", "--calib", "c",
                "--out", "o", "--bits-override", "type:Conv=4,type:Conv=8"});
  EXPECT_EQ(overrides.code, 2) << overrides.output;
  EXPECT_THAT(overrides.output, HasSubstr("given more than once"));
}

// SmallJob's model and calibration samples as files under `dir`.
void WriteSmallJob(const std::filesystem::path& dir) {
  ASSERT_TRUE(WriteJobFiles(SmallJob("cli"), dir.string()).ok());
}

TEST(QuantctlCliTest, QuantizeOnATokenServerWithTokenFileAndDeadline) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "quantctl_token_server";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  WriteSmallJob(dir);
  std::ofstream(dir / "token") << "s3cret-token\n";
  auto server =
      ServerProcess::Start({"--auth_token_file=" + (dir / "token").string()});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::vector<std::string> args = {
      "quantize",     (dir / "model.onnx").string(),
      "--tpc",        "imx500@4",
      "--calib",      (dir / "calib").string(),
      "--server",     (*server)->target(),
      "--deadline=2m"};

  std::vector<std::string> without = args;
  without.insert(without.end(), {"--out", (dir / "refused").string()});
  const CliRun refused = Quantctl(without);
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("UNAUTHENTICATED"));

  std::vector<std::string> with = args;
  with.insert(with.end(), {"--out", (dir / "out").string(), "--token-file",
                           (dir / "token").string()});
  const CliRun run = Quantctl(with);
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "report.json"));
  // Not a terminal: progress as plain lines, no carriage-return frames. A
  // job this short sends its last stage only (the server paces progress,
  // docs/service.md).
  EXPECT_THAT(run.output, HasSubstr("quantctl: report"));
  EXPECT_THAT(run.output, Not(HasSubstr("\r")));
  std::filesystem::remove_all(dir);
}

// docs/cli.md's reference part is `quantctl help --markdown`; regenerate it
// with scripts/gen_cli_docs.sh when a flag changes.
TEST(QuantctlCliTest, DocsMatchTheFlagTables) {
  const char* source = std::getenv("QUANTD_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  std::ifstream in(std::string(source) + "/docs/cli.md");
  ASSERT_TRUE(in) << "docs/cli.md missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string marker = "<!-- generated by quantctl help --markdown -->\n";
  const size_t at = doc.find(marker);
  ASSERT_NE(at, std::string::npos) << "docs/cli.md lacks the marker";
  const CliRun run = Quantctl({"help", "--markdown"});
  ASSERT_EQ(run.code, 0);
  EXPECT_EQ(doc.substr(at + marker.size()), run.output)
      << "docs/cli.md is stale: run scripts/gen_cli_docs.sh";
}

}  // namespace
}  // namespace quantd::testing
