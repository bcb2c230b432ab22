// SIGTERM handling of the real quantd binary: readiness turns NOT_SERVING
// while draining (liveness stays SERVING), new jobs are refused with
// UNAVAILABLE, and the process exits 0.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clients/cpp/client.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "quantd/v1/data_generation_service.grpc.pb.h"
#include "quantd/v1/pruning_service.grpc.pb.h"
#include "quantd/v1/quantization_service.grpc.pb.h"
#include "tests/integration/server_process.h"
#include "tests/testing/subprocess.h"

namespace quantd::testing {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;

// Exit code of `quantctl health --server TARGET --service SERVICE`.
int QuantctlHealth(const std::string& target, const std::string& service) {
  const std::string command = BuildDir() +
                              "/clients/quantctl/quantctl health --server " +
                              target + " --service " + service + " >/dev/null";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

constexpr char kReadiness[] = "quantd.v1.QuantizationService";

// --help lists quantd's own flags, not Abseil's; --version names the commit.
TEST(LifecycleTest, HelpListsTheServerFlagsAndVersionNamesTheCommit) {
  auto help = Subprocess::Start({BuildPath("server/quantd"), "--help"});
  ASSERT_TRUE(help.ok()) << help.status();
  auto help_code = (*help)->Wait(absl::Seconds(30));
  ASSERT_TRUE(help_code.ok()) << help_code.status();
  EXPECT_EQ(*help_code, 0);  // help asked for is a success
  const std::string text = (*help)->Output();
  // The flags' file as the repository names it, not where it was built.
  EXPECT_THAT(text, ::testing::HasSubstr("Flags from server/main.cc"));
  const char* source = std::getenv("QUANTD_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr(
                        std::string(source).substr(1) + "/server")));
  EXPECT_THAT(text, ::testing::HasSubstr("--workers"));
  EXPECT_THAT(text, ::testing::HasSubstr("--max_job_memory_mb"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("No flags matched")));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("--flagfile")));

  auto version = Subprocess::Start({BuildPath("server/quantd"), "--version"});
  ASSERT_TRUE(version.ok()) << version.status();
  auto code = (*version)->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_THAT(
      (*version)->Output(),
      ::testing::MatchesRegex("quantd [0-9.]+ \\(commit [0-9a-z]+\\)\n"));
}

TEST(LifecycleTest, SigtermWithoutJobsExitsZero) {
  auto server = ServerProcess::Start({"--drain_seconds=5"});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Signal(SIGTERM);
  auto code = (*server)->WaitExit();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_TRUE((*server)->WaitForLog("stopped").ok());
}

TEST(LifecycleTest, SigintAlsoDrainsAndExitsZero) {
  auto server = ServerProcess::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Signal(SIGINT);
  auto code = (*server)->WaitExit();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST(LifecycleTest, ReadinessIsNotServingWhileDraining) {
  // A long drain delay keeps the server in the draining phase until the
  // second signal.
  auto server = ServerProcess::Start({"--drain_delay_seconds=120"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok());

  auto health = grpc::health::v1::Health::NewStub((*client)->channel());
  grpc::ClientContext watch_ctx;
  HealthCheckRequest request;
  request.set_service(kReadiness);
  auto watch = health->Watch(&watch_ctx, request);
  HealthCheckResponse response;
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  EXPECT_EQ(QuantctlHealth((*server)->target(), kReadiness), 0);

  (*server)->Signal(SIGTERM);
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE((*server)->WaitForLog("draining").ok());

  // Still answering: liveness stays SERVING, readiness NOT_SERVING, and new
  // jobs are turned away so clients retry elsewhere.
  EXPECT_EQ((*client)->Health("").value(), "SERVING");
  EXPECT_EQ((*client)->Health(kReadiness).value(), "NOT_SERVING");
  // The exec-probe form fails too (exit 1), liveness still passes.
  EXPECT_EQ(QuantctlHealth((*server)->target(), kReadiness), 1);
  EXPECT_EQ(QuantctlHealth((*server)->target(), "''"), 0);
  v1::QuantizeRequest job;
  job.set_onnx_model("m");
  const absl::Status refused = (*client)->Quantize(job).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("draining"));

  watch_ctx.TryCancel();
  watch->Finish();
  (*server)->Signal(SIGTERM);  // ends the drain delay early
  auto code = (*server)->WaitExit();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

// While draining, every call that would start work is refused with
// UNAVAILABLE and the same words (docs/service.md, Errors), whichever RPC.
TEST(LifecycleTest, EveryCallRefusedWhileDrainingSaysTheSameWords) {
  constexpr char kDraining[] =
      "server is draining and accepts no new calls; retry on another replica";
  auto server = ServerProcess::Start({"--drain_delay_seconds=120"});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Signal(SIGTERM);
  ASSERT_TRUE((*server)->WaitForLog("draining").ok());
  auto channel = grpc::CreateChannel((*server)->target(),
                                     grpc::InsecureChannelCredentials());
  std::vector<std::pair<std::string, grpc::Status>> refused;
  {
    grpc::ClientContext ctx;
    v1::QuantizeRequest r;
    r.set_onnx_model("m");
    auto reader = v1::QuantizationService::NewStub(channel)->Quantize(&ctx, r);
    v1::JobEvent e;
    while (reader->Read(&e)) {
    }
    refused.emplace_back("Quantize", reader->Finish());
  }
  {
    grpc::ClientContext ctx;
    v1::PruneRequest r;
    r.set_onnx_model("m");
    auto reader = v1::PruningService::NewStub(channel)->Prune(&ctx, r);
    v1::PruneEvent e;
    while (reader->Read(&e)) {
    }
    refused.emplace_back("Prune", reader->Finish());
  }
  {
    grpc::ClientContext ctx;
    v1::GenerateDataRequest r;
    r.set_onnx_model("m");
    r.set_count(1);
    auto reader =
        v1::DataGenerationService::NewStub(channel)->GenerateData(&ctx, r);
    v1::GenerateDataEvent e;
    while (reader->Read(&e)) {
    }
    refused.emplace_back("GenerateData", reader->Finish());
  }
  {
    grpc::ClientContext ctx;
    v1::UploadReceipt receipt;
    auto writer =
        v1::QuantizationService::NewStub(channel)->UploadModel(&ctx, &receipt);
    writer->WritesDone();
    refused.emplace_back("UploadModel", writer->Finish());
  }
  for (const auto& [rpc, status] : refused) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << rpc;
    EXPECT_EQ(status.error_message(), kDraining) << rpc;
  }
  (*server)->Signal(SIGTERM);  // ends the drain delay early
  auto code = (*server)->WaitExit();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST(LifecycleTest, PortInUseFailsStartupWithNonZeroExit) {
  auto first = ServerProcess::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      ServerProcess::Start({"--port=" + std::to_string((*first)->port())});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("cannot listen"));
}

}  // namespace
}  // namespace quantd::testing
