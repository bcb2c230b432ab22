// The real quantd binary on port 0, driven through clients/cpp: health,
// server info, TPC registry RPCs, request validation, uploads, metrics and
// the QUANTD_* environment flags.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/client.h"
#include "clients/cpp/result_assembler.h"
#include "core/tpc/builtins.h"
#include "core/tpc/json_io.h"
#include "core/tpc/validation.h"
#include "core/util/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantd/v1/quantization_service.grpc.pb.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_jobs.h"

namespace quantd::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

using ::quantd::testing::SmallJob;

class ServiceBasicsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start(
        {"--workers=2", "--max_queued_jobs=3", "--max_message_mb=2",
         "--max_model_mb=1", "--heartbeat_seconds=1",
         "--max_tensor_elements=4096"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    auto client = client::Client::Create(
        {.target = server_->target(), .max_message_bytes = 8 << 20});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  absl::Status QuantizeStatus(const v1::QuantizeRequest& request) {
    return client_->Quantize(request).status();
  }

  static ServerProcess* server_;
  std::unique_ptr<client::Client> client_;
};
ServerProcess* ServiceBasicsTest::server_ = nullptr;

TEST_F(ServiceBasicsTest, LivenessAndReadinessAreServing) {
  EXPECT_EQ(client_->Health("").value(), "SERVING");
  EXPECT_EQ(client_->Health("quantd.v1.QuantizationService").value(),
            "SERVING");
}

TEST_F(ServiceBasicsTest, UnknownHealthServiceIsNotFound) {
  EXPECT_EQ(client_->Health("nope").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ServiceBasicsTest, ServerInfoReportsFlagsAndTpcs) {
  auto info = client_->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->workers(), 2);
  EXPECT_EQ(info->max_queued_jobs(), 3);
  EXPECT_EQ(info->limits().max_receive_message_bytes(), 2 << 20);
  EXPECT_EQ(info->limits().max_model_bytes(), 1 << 20);
  EXPECT_EQ(info->limits().max_tensor_elements(), 4096);
  EXPECT_EQ(info->limits().max_running_jobs(), 2);
  EXPECT_EQ(info->limits().max_queued_jobs(), 3);
  // Defaults: max(256, 4 x --max_message_mb) MiB and 1024 KiB.
  EXPECT_EQ(info->limits().max_receive_memory_bytes(), int64_t{256} << 20);
  EXPECT_EQ(info->limits().max_tpc_json_bytes(), 1024 << 10);
  // No --max_job_memory_mb: 3/4 of the machine's memory, never unlimited.
  EXPECT_GT(info->limits().max_job_memory_bytes(), 0);
  EXPECT_EQ(info->heartbeat_seconds(), 1);
  EXPECT_EQ(info->tpcs_size(), static_cast<int>(tpc::BuiltinTpcs().size()));
  EXPECT_FALSE(info->version().empty());
}

TEST_F(ServiceBasicsTest, ListTpcsHasEveryBuiltin) {
  auto list = client_->ListTpcs();
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::string> ids, expected;
  for (const auto& s : list->tpcs()) ids.push_back(s.id());
  for (const auto& b : tpc::BuiltinTpcs()) {
    expected.push_back(absl::StrCat(b.name, "@", b.version));
  }
  EXPECT_THAT(ids, UnorderedElementsAreArray(expected));
}

TEST_F(ServiceBasicsTest, GetTpcReturnsProtoAndMctJson) {
  auto got = client_->GetTpc("imx500@4.0");
  ASSERT_TRUE(got.ok()) << got.status();
  const v1::TargetPlatformCapabilities expected = tpc::Imx500Tpc("4.0");
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(expected, got->tpc())) << diff;
  EXPECT_EQ(got->mct_json(), tpc::TpcToJson(expected));
  EXPECT_EQ(got->summary().source(), "builtin");
}

TEST_F(ServiceBasicsTest, GetTpcMajorVersionPicksLatestMinor) {
  // Built-ins have imx500 4.0 and 4.1: "imx500@4" is 4.1.
  EXPECT_EQ(client_->GetTpc("imx500@4")->summary().id(), "imx500@4.1");
}

TEST_F(ServiceBasicsTest, UnknownTpcIsNotFoundListingKnownOnes) {
  const absl::Status status = client_->GetTpc("nosuch@1.0").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("name: TPC 'nosuch@1.0' not found"),
                    HasSubstr("imx500@4.0"), HasSubstr("tflite@1.0")));
}

TEST_F(ServiceBasicsTest, ValidateTpcListsEveryError) {
  v1::TargetPlatformCapabilities broken = tpc::Imx500Tpc("4.0");
  broken.mutable_default_qco()->clear_quantization_configurations();
  broken.mutable_operator_set(0)->set_name(broken.operator_set(1).name());
  v1::ValidateTpcRequest request;
  *request.mutable_tpc() = broken;
  auto response = client_->ValidateTpc(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->valid());
  // Oracle: the core validator run in this process on the same TPC.
  const std::vector<std::string> expected = tpc::TpcErrors(broken);
  ASSERT_GE(expected.size(), 2u);
  EXPECT_THAT(response->errors(), ElementsAreArray(expected));
}

TEST_F(ServiceBasicsTest, ValidateTpcAcceptsBuiltinAsMctJson) {
  v1::ValidateTpcRequest request;
  request.set_mct_json(tpc::TpcToJson(tpc::TfliteTpc()));
  auto response = client_->ValidateTpc(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->valid()) << response->DebugString();
}

TEST_F(ServiceBasicsTest, TpcJsonOverMaxTpcJsonKbIsRefusedUnparsed) {
  // 1.5 MiB: under --max_message_mb=2, over the default --max_tpc_json_kb.
  v1::ValidateTpcRequest request;
  request.set_mct_json(std::string(3 << 19, '['));
  auto response = client_->ValidateTpc(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->valid());
  EXPECT_THAT(response->errors(),
              Contains(HasSubstr("mct_json: 1572864 bytes of JSON exceed the "
                                 "limit of 1048576 bytes "
                                 "(--max_tpc_json_kb=1024)")));
}

TEST_F(ServiceBasicsTest, OutOfRangeOptionsAreRejectedNamingTheField) {
  // Each of these is out of range (docs/reliability.md, validation).
  const struct {
    std::function<void(v1::QuantizeRequest&)> edit;
    std::string message;
  } cases[] = {
      {[](v1::QuantizeRequest& r) {
         r.mutable_mixed_precision()->set_metric_epsilon(std::nan(""));
       },
       "mixed_precision.metric_epsilon: nan is not a finite number >= 0"},
      {[](v1::QuantizeRequest& r) {
         r.mutable_mixed_precision()->set_exp_distance_weighting_sigma(0);
       },
       "mixed_precision.exp_distance_weighting_sigma: 0 is not a finite "
       "number > 0"},
      {[](v1::QuantizeRequest& r) {
         r.mutable_mixed_precision()->set_kernel_weights_bits(-4);
       },
       "mixed_precision.kernel_weights_bits: -4 is not in [1, 16]"},
      {[](v1::QuantizeRequest& r) {
         r.mutable_export_options()->set_activation_storage(
             static_cast<v1::ActivationStorage>(99));
       },
       "export_options.activation_storage: 99 is not"},
      {[](v1::QuantizeRequest& r) {
         r.mutable_export_options()->set_weight_storage(
             static_cast<v1::WeightStorage>(7));
       },
       "export_options.weight_storage: 7 is not"},
      {[](v1::QuantizeRequest& r) {
         auto* k = r.mutable_quantization()
                       ->mutable_framework_info()
                       ->add_kernel_ops();
         k->set_op_type("Conv");
         k->set_weight_input(1);
         k->set_out_channel_axis(100);
       },
       "quantization.framework_info.kernel_ops[0] (Conv).out_channel_axis: "
       "100 is not a weight axis"},
      {[](v1::QuantizeRequest& r) {
         auto* range = r.mutable_quantization()
                           ->mutable_framework_info()
                           ->add_activation_ranges();
         range->set_op_type("Relu");
         range->set_min(std::nan(""));
       },
       "quantization.framework_info.activation_ranges[0] (Relu).min: NaN"},
  };
  for (const auto& c : cases) {
    v1::QuantizeRequest request = SmallJob("bad-option");
    c.edit(request);
    const absl::Status status = QuantizeStatus(request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST_F(ServiceBasicsTest, ModelWithoutOutputsFailsNamingGraphOutput) {
  // Without the check the job would finish "OK" with SQNR 0.0.
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 3, 8, 8});
  b.AddNode("Relu", {"x"}, {"y"}, "relu_1");
  v1::QuantizeRequest request = SmallJob("no-outputs");
  request.set_onnx_model(b.Serialize());
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("graph.output: the model has no outputs"));
}

TEST_F(ServiceBasicsTest, QuantizeWithoutModelNamesTheField) {
  v1::QuantizeRequest request;
  request.mutable_tpc()->set_name("imx500@4.0");
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("onnx_model: empty"));
}

TEST_F(ServiceBasicsTest, QuantizeWithModelAndModelRefIsInvalid) {
  v1::QuantizeRequest request;
  request.set_onnx_model("x");
  request.set_model_ref(Sha256Hex("x"));
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("onnx_model and model_ref are both set"));
}

TEST_F(ServiceBasicsTest, MalformedModelRefNamesTheField) {
  v1::QuantizeRequest request;
  request.set_model_ref("not-a-digest");
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("model_ref: "));
}

TEST_F(ServiceBasicsTest, MissingUploadIsNotFound) {
  v1::QuantizeRequest request;
  request.set_model_ref(Sha256Hex("never uploaded"));
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("model_ref: no upload"));
}

TEST_F(ServiceBasicsTest, UnknownTpcInQuantizeIsNotFoundListingKnownOnes) {
  v1::QuantizeRequest request;
  request.set_onnx_model("model bytes");
  request.mutable_tpc()->set_name("imx999@1.0");
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("tpc.name: TPC 'imx999@1.0' not found"),
                    HasSubstr("available: imx500@1.0")));
}

TEST_F(ServiceBasicsTest, ModelOverMaxModelMbIsInvalidArgument) {
  // 1.5 MiB: under --max_message_mb=2, over --max_model_mb=1.
  v1::QuantizeRequest request;
  request.set_onnx_model(std::string(3 << 19, 'm'));
  request.mutable_tpc()->set_name("imx500@4.0");
  const absl::Status status =
      client_->Quantize(request, nullptr, {.inline_limit_bytes = 8 << 20})
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("onnx_model: 1572864 bytes exceeds the limit of "
                        "1048576 bytes"));
}

TEST_F(ServiceBasicsTest, MessageOverMaxMessageMbIsRejectedByTransport) {
  v1::QuantizeRequest request;
  request.set_onnx_model(std::string(3 << 20, 'm'));
  const absl::Status status =
      client_->Quantize(request, nullptr, {.inline_limit_bytes = 8 << 20})
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(ServiceBasicsTest, UploadRoundTripIsIdempotent) {
  const std::string content(3 << 20, 'u');  // several chunks of 2 MiB max
  auto first = client_->Upload(v1::UPLOAD_KIND_MODEL, content,
                               absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->sha256(), Sha256Hex(content));
  EXPECT_EQ(first->size(), static_cast<int64_t>(content.size()));
  EXPECT_FALSE(first->already_present());
  auto again = client_->Upload(v1::UPLOAD_KIND_MODEL, content,
                               absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_present());
  EXPECT_EQ(again->sha256(), first->sha256());
}

TEST_F(ServiceBasicsTest, UploadWithWrongDigestIsRejected) {
  grpc::ClientContext ctx;
  v1::UploadReceipt receipt;
  auto writer = client_->stub().UploadModel(&ctx, &receipt);
  v1::UploadChunk chunk;
  chunk.set_kind(v1::UPLOAD_KIND_MODEL);
  chunk.set_total_size(5);
  chunk.set_sha256(Sha256Hex("other"));
  chunk.set_data("hello");
  writer->Write(chunk);
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("content hashes to " + Sha256Hex("hello")));
}

TEST_F(ServiceBasicsTest, UploadOfModelUsedAsSamplesIsInvalid) {
  const std::string content = "model as samples";
  auto receipt = client_->Upload(v1::UPLOAD_KIND_MODEL, content,
                                 absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(receipt.ok()) << receipt.status();
  v1::QuantizeRequest request;
  request.set_onnx_model("m");
  request.set_samples_ref(receipt->sha256());
  const absl::Status status = QuantizeStatus(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("samples_ref: upload " + receipt->sha256() +
                        " is a UPLOAD_KIND_MODEL"));
}

// One UploadModel stream of `chunks` (the first carries the header).
grpc::Status UploadChunks(client::Client& c,
                          const std::vector<v1::UploadChunk>& chunks,
                          v1::UploadReceipt* receipt) {
  grpc::ClientContext ctx;
  auto writer = c.stub().UploadModel(&ctx, receipt);
  for (const v1::UploadChunk& chunk : chunks) {
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST_F(ServiceBasicsTest, UploadOfUnknownKindIsRejected) {
  v1::UploadChunk chunk;
  chunk.set_kind(static_cast<v1::UploadKind>(99));
  chunk.set_total_size(5);
  chunk.set_sha256(Sha256Hex("hello"));
  chunk.set_data("hello");
  v1::UploadReceipt receipt;
  const grpc::Status status = UploadChunks(*client_, {chunk}, &receipt);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("chunk[0].kind: 99 is not"));
}

TEST_F(ServiceBasicsTest, KnowingTheDigestIsNotEnoughToClaimAnUpload) {
  const std::string content = "content only its uploader has";
  ASSERT_TRUE(client_
                  ->Upload(v1::UPLOAD_KIND_MODEL, content,
                           absl::Now() + absl::Seconds(30))
                  .ok());
  // The header of the same content without its bytes must not get
  // already_present=true (nor refresh the upload's TTL).
  v1::UploadChunk header;
  header.set_kind(v1::UPLOAD_KIND_MODEL);
  header.set_total_size(static_cast<int64_t>(content.size()));
  header.set_sha256(Sha256Hex(content));
  v1::UploadReceipt receipt;
  const grpc::Status status = UploadChunks(*client_, {header}, &receipt);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("stream ended after 0 of"));
  EXPECT_FALSE(receipt.already_present());
}

TEST_F(ServiceBasicsTest, SamplesUploadedAgainAsModelAreUsableAsModel) {
  const v1::QuantizeRequest job = SmallJob("samples-then-model");
  auto as_samples = client_->Upload(v1::UPLOAD_KIND_SAMPLES, job.onnx_model(),
                                    absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(as_samples.ok()) << as_samples.status();
  auto as_model = client_->Upload(v1::UPLOAD_KIND_MODEL, job.onnx_model(),
                                  absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(as_model.ok()) << as_model.status();
  EXPECT_TRUE(as_model->already_present());
  v1::QuantizeRequest request = job;
  request.clear_onnx_model();
  request.set_model_ref(as_model->sha256());
  // Not "model_ref: upload ... is a UPLOAD_KIND_SAMPLES": the digest names
  // the content, whatever kind it was uploaded as first.
  auto result = client_->Quantize(request);
  EXPECT_TRUE(result.ok()) << result.status();
}

TEST_F(ServiceBasicsTest, ProgressFractionsNeverGoBackWithinAStage) {
  // Calibration and the report stage count samples on the compute threads;
  // their reports must reach the client in order (never 3/n, then 2/n).
  const v1::QuantizeRequest request =
      testing::ConvJob(3, 8, 4, 64, "monotonic-progress");
  std::map<std::string, double> last;
  std::vector<std::string> backwards;
  auto result = client_->Quantize(request, [&](const v1::JobEvent& e) {
    if (!e.has_progress()) return;
    const auto& p = e.progress();
    auto [it, first] = last.emplace(p.stage(), p.fraction());
    if (!first && p.fraction() < it->second) {
      backwards.push_back(
          absl::StrCat(p.stage(), ": ", it->second, " then ", p.fraction()));
    }
    it->second = p.fraction();
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(backwards, ::testing::IsEmpty());
  EXPECT_TRUE(last.count("report"));
}

TEST_F(ServiceBasicsTest, MetricsCountRpcsByCodeWithGoGrpcLabels) {
  ASSERT_EQ(client_->GetTpc("missing@0").status().code(),
            absl::StatusCode::kNotFound);
  auto metrics = HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const std::string labels =
      "grpc_method=\"GetTpc\",grpc_service=\"quantd.v1.QuantizationService\","
      "grpc_type=\"unary\"";
  EXPECT_GE(MetricValue(*metrics, "grpc_server_started_total{" + labels + "}"),
            1);
  EXPECT_GE(MetricValue(*metrics,
                        "grpc_server_handled_total{grpc_code="
                        "\"NotFound\"," +
                            labels + "}"),
            1);
  EXPECT_GE(MetricValue(*metrics,
                        "grpc_server_handling_seconds_count{" + labels + "}"),
            1);
  EXPECT_EQ(MetricValue(*metrics, "quantd_queue_depth"), 0);
  EXPECT_EQ(MetricValue(*metrics, "quantd_workers_busy"), 0);
  EXPECT_THAT(*metrics, HasSubstr("quantd_build_info{git_sha=\""));
  // quantd_jobs_total and quantd_job_duration_seconds have no series until
  // a job ran (jobs_test checks them).
  EXPECT_THAT(*metrics, HasSubstr("quantd_tpc_cache_hits_total"));
  EXPECT_THAT(*metrics, HasSubstr("quantd_tpc_cache_misses_total"));
}

TEST_F(ServiceBasicsTest, EveryRejectedJobIsLoggedWithItsRequestId) {
  v1::QuantizeRequest request;
  request.set_request_id("req-log-42");
  ASSERT_FALSE(QuantizeStatus(request).ok());
  auto line =
      server_->WaitForLog("job rejected", {{"request_id", "req-log-42"}});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ((*line)["level"], "info");
  EXPECT_TRUE(line->contains("job_id"));
  EXPECT_TRUE(line->contains("peer"));
  EXPECT_TRUE(line->contains("ts"));
}

// The id comes back percent-escaped (server/client_metadata.h): the raw
// bytes made gRPC abort the server.
TEST_F(ServiceBasicsTest, RequestIdHeaderIsEscaped) {
  auto channel = grpc::CreateChannel(server_->target(),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::QuantizationService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::QuantizeRequest request;
  request.set_request_id("mod\xC3\xA8le-1\n%");
  auto reader = stub->Quantize(&ctx, request);
  v1::JobEvent event;
  while (reader->Read(&event)) {
  }
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const auto& headers = ctx.GetServerInitialMetadata();
  const auto found = headers.find("x-request-id");
  ASSERT_NE(found, headers.end());
  EXPECT_EQ(std::string(found->second.data(), found->second.size()),
            "mod%C3%A8le-1%0A%25");
}

// A 100 KB name echoed whole in the error would exceed the client's 8 KiB
// metadata limit: the client would see RESOURCE_EXHAUSTED instead of
// NOT_FOUND (and quantctl batch would retry it). The status message is
// bounded; the whole message goes to the log.
TEST_F(ServiceBasicsTest, LongErrorKeepsItsCodeAndIsLoggedWhole) {
  const std::string name(100000, 'n');
  const absl::Status status = client_->GetTpc(name).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status.message();
  EXPECT_LE(status.message().size(), 4096u);
  EXPECT_THAT(std::string(status.message()), HasSubstr(" more bytes)"));
  auto line = server_->WaitForLog("error message cut for the client",
                                  {{"rpc", "GetTpc"}, {"code", "NOT_FOUND"}});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_THAT((*line)["error"].get<std::string>(), HasSubstr(name));
}

TEST(ServerFlagsTest, EnvironmentSetsFlagsAndCommandLineWins) {
  auto server = ServerProcess::Start(
      {"--workers=2"}, {"QUANTD_WORKERS=5", "QUANTD_MAX_QUEUED_JOBS=7"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = client::Client::Create({.target = (*server)->target()});
  ASSERT_TRUE(client.ok());
  auto info = (*client)->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->workers(), 2);          // command line beats environment
  EXPECT_EQ(info->max_queued_jobs(), 7);  // environment beats default (16)
}

TEST(ServerFlagsTest, BadEnvironmentValueStopsStartupNamingIt) {
  auto server = ServerProcess::Start({}, {"QUANTD_WORKERS=many"});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()),
              HasSubstr("QUANTD_WORKERS=\\\"many\\\""));
}

}  // namespace
}  // namespace quantd::testing
