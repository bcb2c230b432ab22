// The Prune RPC on the real quantd binary: progress then the result on the
// stream, a result above the max message size in verified chunks, bad
// requests as statuses naming what is missing, and what every job stream
// has (heartbeats while the job is busy, the job id in the metadata).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "clients/cpp/result_assembler.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantd/v1/pruning_service.grpc.pb.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/server_process.h"
#include "tests/integration/stall_heartbeats.h"
#include "tests/integration/test_jobs.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;

v1::TargetPlatformCapabilities TpcWithSimd2() {
  v1::TargetPlatformCapabilities tpc = tpc::BuiltinTpcs()[0].tpc;
  auto edit = [](v1::QuantizationConfigOptions* qco) {
    qco->mutable_base_config()->set_simd_size(2);
    for (auto& c : *qco->mutable_quantization_configurations()) {
      c.set_simd_size(2);
    }
  };
  edit(tpc.mutable_default_qco());
  for (auto& set : *tpc.mutable_operator_set()) {
    if (set.has_qc_options()) edit(set.mutable_qc_options());
  }
  return tpc;
}

// x -> Conv (4 channels; 1 and 3 all zero) -> Relu -> Conv (3) -> y.
v1::PruneRequest DeadChannelRequest(bool second_conv) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w1", {1, 2, 0, 0, -1, 0.5f, 0, 0}, {4, 2, 1, 1});
  b.FloatInitializer("w2", std::vector<float>(12, 0.5f), {3, 4, 1, 1});
  b.AddNode("Conv", {"x", "w1"}, {second_conv ? "c1" : "y"}, "conv1");
  if (second_conv) {
    b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
    b.AddNode("Conv", {"r1", "w2"}, {"y"}, "conv2");
  }
  b.Output("y", DType::kFloat);
  v1::PruneRequest r;
  r.set_onnx_model(b.Serialize());
  *r.mutable_tpc()->mutable_inline_tpc() = TpcWithSimd2();
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = 0.1f * (i % 7) - 0.3f;
  *r.add_calibration_samples()->add_inputs() =
      TensorToSampleProto(Tensor::FromVector(x, {1, 2, 4, 4}), "x");
  r.set_weights_memory_bytes(2 * 2 * 4 + 3 * 2 * 4);  // 2 channels kept
  return r;
}

// x [1, 96, 4, 4] -> Conv 3x3 (256) -> Relu -> Conv 3x3 (8) -> y: 958 KB
// of float weights, a request under 1 MiB whose result (the pruned model
// plus its quantized QDQ model and QuantizedGraph) is over it.
v1::PruneRequest LargeResultRequest() {
  v1::PruneRequest r;
  r.set_onnx_model(TwoConvModel(96, 4, 256, 8));
  *r.mutable_tpc()->mutable_inline_tpc() = TpcWithSimd2();
  std::vector<float> x(96 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * (i % 7) - 0.3f;
  *r.add_calibration_samples()->add_inputs() =
      TensorToSampleProto(Tensor::FromVector(x, {1, 96, 4, 4}), "x");
  r.set_weights_memory_fraction(0.9);
  r.set_importance_metric("magnitude");
  r.mutable_quantize();  // default settings, the pruning request's TPC
  return r;
}

class PruneRpcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start({"--workers=1"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  // Runs the call on `target` (default: the suite's server); the events in
  // `events`.
  static grpc::Status Prune(const v1::PruneRequest& request,
                            std::vector<v1::PruneEvent>* events,
                            const std::string& target = "") {
    auto stub = v1::PruningService::NewStub(
        grpc::CreateChannel(target.empty() ? server_->target() : target,
                            grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    auto reader = stub->Prune(&ctx, request);
    v1::PruneEvent e;
    while (reader->Read(&e)) events->push_back(e);
    return reader->Finish();
  }
  static ServerProcess* server_;
};
ServerProcess* PruneRpcTest::server_ = nullptr;

// A Prune call is as observable as a Quantize call: its JSON log lines
// (accepted with the reserved memory, finished with code and duration,
// rejected with the reason) and the per-method gRPC and job metrics.
TEST_F(PruneRpcTest, CallsAreLoggedAndCounted) {
  v1::PruneRequest ok = DeadChannelRequest(true);
  ok.set_request_id("observed-prune");
  std::vector<v1::PruneEvent> events;
  ASSERT_TRUE(Prune(ok, &events).ok());
  auto accepted = server_->WaitForLog(
      "job accepted", {{"rpc", "Prune"}, {"request_id", "observed-prune"}});
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->contains("memory_bytes"));
  auto finished = server_->WaitForLog(
      "job finished",
      {{"rpc", "Prune"}, {"request_id", "observed-prune"}, {"status", "OK"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_TRUE(finished->contains("seconds"));

  v1::PruneRequest bad = ok;
  bad.set_request_id("refused-prune");
  bad.set_num_threads(-5);
  events.clear();
  EXPECT_EQ(Prune(bad, &events).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  auto rejected =
      server_->WaitForLog("job rejected", {{"rpc", "Prune"},
                                           {"request_id", "refused-prune"},
                                           {"code", "INVALID_ARGUMENT"}});
  ASSERT_TRUE(rejected.ok()) << rejected.status();

  // The stream's handled counters are bumped as the server finishes the
  // call, which can be just after the client holds its status.
  auto text = WaitForMetrics(
      server_->metrics_port(),
      {{"grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Prune\","
        "grpc_service=\"quantd.v1.PruningService\","
        "grpc_type=\"server_stream\"}",
        1},
       {"grpc_server_handled_total{grpc_code=\"InvalidArgument\","
        "grpc_method=\"Prune\",grpc_service=\"quantd.v1.PruningService\","
        "grpc_type=\"server_stream\"}",
        1},
       {"quantd_jobs_total{status=\"ok\"}", 1}});
  ASSERT_TRUE(text.ok()) << text.status();
}

TEST_F(PruneRpcTest, StreamsProgressThenTheResult) {
  std::vector<v1::PruneEvent> events;
  grpc::Status st = Prune(DeadChannelRequest(true), &events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(events.front().has_progress());
  ASSERT_TRUE(events.back().has_result());
  const v1::PruneResult& r = events.back().result();
  ASSERT_EQ(r.layers_size(), 1);
  EXPECT_EQ(r.layers(0).kept(), 2);
  EXPECT_THAT(r.layers(0).removed_channels(), ::testing::ElementsAre(1, 3));
  EXPECT_EQ(r.weights_memory_after(), 40);
  EXPECT_TRUE(ImportOnnx(r.pruned_onnx()).ok());
}

TEST_F(PruneRpcTest, ResultAboveTheMessageLimitArrivesInVerifiedChunks) {
  const v1::PruneRequest request = LargeResultRequest();
  ASSERT_LT(request.ByteSizeLong(), 1u << 20);
  // The oracle: the same request on a server with the default 64 MiB limit,
  // whose result comes whole.
  std::vector<v1::PruneEvent> whole_events;
  grpc::Status st = Prune(request, &whole_events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(whole_events.back().has_result());
  const v1::PruneResult& whole = whole_events.back().result();
  ASSERT_GT(whole.ByteSizeLong(), 1u << 20);

  auto small = ServerProcess::Start({"--workers=1", "--max_message_mb=1"});
  ASSERT_TRUE(small.ok()) << small.status();
  std::vector<v1::PruneEvent> events;
  st = Prune(request, &events, (*small)->target());
  ASSERT_TRUE(st.ok()) << st.error_message();
  client::ResultAssembler assembler;
  int chunks = 0;
  for (const v1::PruneEvent& e : events) {
    EXPECT_FALSE(e.has_result());
    if (!e.has_result_chunk()) continue;
    ++chunks;
    EXPECT_LE(e.ByteSizeLong(), 1u << 20);
    ASSERT_TRUE(assembler.Add(e.result_chunk()).ok());
  }
  EXPECT_GE(chunks, 2);
  v1::PruneResult chunked;
  ASSERT_TRUE(assembler.FinishInto(&chunked).ok());
  EXPECT_EQ(chunked.pruned_onnx(), whole.pruned_onnx());
  EXPECT_EQ(chunked.quantized().qdq_onnx(), whole.quantized().qdq_onnx());
  EXPECT_EQ(chunked.weights_memory_after(), whole.weights_memory_after());
}

TEST_F(PruneRpcTest, ModelWithoutPrunableLayersIsFailedPrecondition) {
  std::vector<v1::PruneEvent> events;
  grpc::Status st = Prune(DeadChannelRequest(false), &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(st.error_message(), HasSubstr("no prunable layers"));
}

TEST_F(PruneRpcTest, MissingTargetIsInvalidArgument) {
  v1::PruneRequest r = DeadChannelRequest(true);
  r.clear_weights_memory_bytes();
  std::vector<v1::PruneEvent> events;
  grpc::Status st = Prune(r, &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("weights_memory_fraction"));
  EXPECT_TRUE(events.empty());
}

// The job reactor's heartbeats reach a Prune stream whose job is busy: here
// stalled inside its importance stage (--fault_injection) until the client
// cancels, so nothing but heartbeats can arrive after the stall's warning.
TEST(PruneStreamTest, HeartbeatsArriveWhileTheJobIsStalled) {
  auto server = ServerProcess::Start({"--workers=1", "--heartbeat_seconds=1",
                                      "--fault_injection=stall:importance@1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::PruningService::NewStub(grpc::CreateChannel(
      (*server)->target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  // A stream without heartbeats fails here instead of hanging.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  v1::PruneRequest request = DeadChannelRequest(true);
  request.set_request_id("prune-heartbeat");
  auto reader = stub->Prune(&ctx, request);
  testing::ExpectHeartbeatsAfterTheStall<v1::PruneEvent>(reader.get());
  v1::PruneEvent e;
  // Every job stream names its job in the initial metadata.
  const auto& metadata = ctx.GetServerInitialMetadata();
  const auto job_id = metadata.find("x-job-id");
  ASSERT_NE(job_id, metadata.end());
  EXPECT_THAT(std::string(job_id->second.data(), job_id->second.size()),
              ::testing::MatchesRegex("[0-9a-f]{16}"));
  const auto request_id = metadata.find("x-request-id");
  ASSERT_NE(request_id, metadata.end());
  EXPECT_EQ(std::string(request_id->second.data(), request_id->second.size()),
            "prune-heartbeat");
  ctx.TryCancel();
  while (reader->Read(&e)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The job reactor's log line for the cancelled job.
  auto finished =
      (*server)->WaitForLog("job finished", {{"rpc", "Prune"},
                                             {"request_id", "prune-heartbeat"},
                                             {"status", "CANCELLED"}});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_TRUE(finished->contains("cancel_seconds"));
}

}  // namespace
}  // namespace quantd::testing
