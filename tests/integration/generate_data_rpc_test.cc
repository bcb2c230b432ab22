// The GenerateData RPC on the real quantd binary: the images equal the
// in-process generation's byte for byte, progress then results on the
// stream, a model without BatchNormalization named, cancellation, and
// heartbeats while the job is busy.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "clients/cpp/client.h"
#include "core/datagen/data_generation.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantd/v1/data_generation_service.grpc.pb.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/server_process.h"
#include "tests/integration/stall_heartbeats.h"

namespace quantd::testing {
namespace {

using ::testing::HasSubstr;

// x [1, 3, 8, 8] -> Conv (4) -> [BatchNormalization] -> Relu ->
// GlobalAveragePool -> y.
std::string GenDataModel(bool with_bn) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 3, 8, 8});
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * ((i * 7) % 11) - 0.25f;
  b.FloatInitializer("w", w, {4, 3, 3, 3});
  b.AddNode("Conv", {"x", "w"}, {"c"}).Ints("pads", {1, 1, 1, 1});
  std::string last = "c";
  if (with_bn) {
    b.FloatInitializer("scale", {0.9f, 0.5f, 1.1f, 0.7f}, {4});
    b.FloatInitializer("bias", {0.1f, -0.2f, 0.0f, 0.05f}, {4});
    b.FloatInitializer("mean", {0.5f, -0.3f, 0.2f, 0.0f}, {4});
    b.FloatInitializer("var", {0.3f, 1.5f, 0.8f, 0.5f}, {4});
    b.AddNode("BatchNormalization", {"c", "scale", "bias", "mean", "var"},
              {"bn"});
    last = "bn";
  }
  b.AddNode("Relu", {last}, {"r"});
  b.AddNode("GlobalAveragePool", {"r"}, {"y"});
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

v1::GenerateDataRequest GenDataRequest(bool with_bn, int64_t count) {
  v1::GenerateDataRequest r;
  r.set_onnx_model(GenDataModel(with_bn));
  r.set_count(count);
  r.set_batch_size(count);
  r.set_iterations(6);
  r.set_learning_rate(0.05);
  r.set_extra_pixels(2);
  r.set_seed(7);
  return r;
}

class GenerateDataRpcTest : public ::testing::Test {
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
  static std::unique_ptr<v1::DataGenerationService::Stub> Stub() {
    return v1::DataGenerationService::NewStub(grpc::CreateChannel(
        server_->target(), grpc::InsecureChannelCredentials()));
  }
  // Runs the call (at most a minute); the events in `events`.
  grpc::Status Generate(const v1::GenerateDataRequest& request,
                        std::vector<v1::GenerateDataEvent>* events) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    auto reader = Stub()->GenerateData(&ctx, request);
    v1::GenerateDataEvent e;
    while (reader->Read(&e)) events->push_back(e);
    return reader->Finish();
  }
  static ServerProcess* server_;
};
ServerProcess* GenerateDataRpcTest::server_ = nullptr;

TEST_F(GenerateDataRpcTest, ImagesEqualInProcessGenerationByteForByte) {
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(GenDataRequest(true, 3), &events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // The oracle: the engine called directly with the same options.
  auto model = ImportOnnx(GenDataModel(true));
  ASSERT_TRUE(model.ok()) << model.status();
  datagen::DataGenOptions o;
  o.count = 3;
  o.batch_size = 3;
  o.iterations = 6;
  o.learning_rate = 0.05;
  o.extra_pixels = 2;
  o.seed = 7;
  auto expected = datagen::GenerateData(
      std::make_shared<const Model>(*std::move(model)), o);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::vector<v1::Tensor> got;
  for (const v1::GenerateDataEvent& e : events) {
    if (!e.has_result()) continue;
    EXPECT_EQ(e.result().input_name(), "x");
    EXPECT_EQ(e.result().aligned_tensors(), 1);
    for (const v1::Tensor& t : e.result().samples()) got.push_back(t);
  }
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& x = expected->samples[i];
    EXPECT_EQ(got[i].name(), "x");
    EXPECT_THAT(got[i].dims(), ::testing::ElementsAre(1, 3, 8, 8));
    EXPECT_EQ(got[i].raw_data(),
              std::string(reinterpret_cast<const char*>(x.data<float>()),
                          x.num_elements() * sizeof(float)))
        << "image " << i;
  }
}

TEST_F(GenerateDataRpcTest, QuantizeGeneratesOnTheServerAsInProcess) {
  v1::QuantizeRequest request;
  request.set_onnx_model(GenDataModel(true));
  request.mutable_tpc()->set_name("imx500@4.1");
  v1::GeneratedCalibration* g = request.mutable_generated_calibration();
  g->set_count(3);
  g->set_iterations(6);
  g->set_learning_rate(0.05);
  g->set_extra_pixels(2);
  g->set_seed(7);
  auto client = client::Client::Create({.target = server_->target()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto remote = (*client)->Quantize(request, [](const v1::JobEvent&) {});
  ASSERT_TRUE(remote.ok()) << remote.status();
  // Progress is paced (a stage this short may go unannounced); the report
  // times every stage the server ran.
  EXPECT_THAT(remote->report_json(), HasSubstr("\"generate\""));
  // The oracle: the same request run by the engine in this process.
  TpcRegistry registry;
  ASSERT_TRUE(registry.AddBuiltins().ok());
  JobContext context;
  context.registry = &registry;
  auto local = RunQuantizeJob(request, context);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_FALSE(remote->qdq_onnx().empty());
  EXPECT_EQ(remote->qdq_onnx(), local->qdq_onnx());
}

TEST_F(GenerateDataRpcTest, QuantizeWithSamplesAndGeneratedIsInvalidArgument) {
  v1::QuantizeRequest request;
  request.set_onnx_model(GenDataModel(true));
  request.mutable_tpc()->set_name("imx500@4.1");
  request.mutable_generated_calibration()->set_count(2);
  std::vector<float> x(3 * 8 * 8, 0.5f);
  *request.add_calibration_samples()->add_inputs() =
      TensorToSampleProto(Tensor::FromVector(x, {1, 3, 8, 8}), "x");
  auto client = client::Client::Create({.target = server_->target()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto result = (*client)->Quantize(request, [](const v1::JobEvent&) {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("generated_calibration"));
}

TEST_F(GenerateDataRpcTest, ProgressOfTheGenerateStageComesBeforeResults) {
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(GenDataRequest(true, 2), &events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  bool generate_progress = false;
  for (const v1::GenerateDataEvent& e : events) {
    if (e.has_result()) break;
    if (e.has_progress() && e.progress().stage() == "generate") {
      generate_progress = true;
      EXPECT_THAT(e.progress().message(), HasSubstr("loss"));
    }
  }
  EXPECT_TRUE(generate_progress);
  EXPECT_TRUE(events.back().has_result());
}

TEST_F(GenerateDataRpcTest, ImagesAreSplitOverResultEventsInOrder) {
  // 17 images of 768 bytes: 16 per event at most, so two events.
  std::vector<v1::GenerateDataEvent> events;
  v1::GenerateDataRequest r = GenDataRequest(true, 17);
  r.set_iterations(1);
  grpc::Status st = Generate(r, &events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  std::vector<int64_t> first, sizes;
  for (const v1::GenerateDataEvent& e : events) {
    if (!e.has_result()) continue;
    EXPECT_EQ(e.result().count(), 17);
    first.push_back(e.result().first_index());
    sizes.push_back(e.result().samples_size());
  }
  EXPECT_THAT(first, ::testing::ElementsAre(0, 16));
  EXPECT_THAT(sizes, ::testing::ElementsAre(16, 1));
}

TEST_F(GenerateDataRpcTest, ModelWithoutBatchNormIsFailedPrecondition) {
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(GenDataRequest(false, 2), &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(st.error_message(), HasSubstr("0 BatchNormalization node(s)"));
  EXPECT_THAT(st.error_message(), HasSubstr("statistics"));
}

TEST_F(GenerateDataRpcTest, MissingModelIsInvalidArgument) {
  v1::GenerateDataRequest r = GenDataRequest(true, 2);
  r.clear_onnx_model();
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(r, &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("onnx_model"));
  EXPECT_TRUE(events.empty());
}

// A shape that contradicts the model's input is named as such, even when
// the images it asks for would not fit the server's memory (the estimate
// comes after the input is checked).
TEST_F(GenerateDataRpcTest, ShapeAgainstTheModelIsNamedBeforeAdmission) {
  v1::GenerateDataRequest r = GenDataRequest(true, 2);
  for (int64_t d : {1, 4, 16384, 16384}) r.add_shape(d);
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(r, &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(),
              HasSubstr("shape dim 1 is 4 but input 'x' declares 3"));
}

TEST_F(GenerateDataRpcTest, UploadedModelGivesTheSameImagesAsInlineBytes) {
  auto client = client::Client::Create({.target = server_->target()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto receipt = (*client)->Upload(v1::UPLOAD_KIND_MODEL, GenDataModel(true),
                                   absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(receipt.ok()) << receipt.status();
  v1::GenerateDataRequest by_ref = GenDataRequest(true, 2);
  by_ref.clear_onnx_model();
  by_ref.set_model_ref(receipt->sha256());
  std::vector<v1::GenerateDataEvent> inline_events, ref_events;
  ASSERT_TRUE(Generate(GenDataRequest(true, 2), &inline_events).ok());
  grpc::Status st = Generate(by_ref, &ref_events);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(inline_events.back().has_result());
  ASSERT_TRUE(ref_events.back().has_result());
  EXPECT_EQ(ref_events.back().result().SerializeAsString(),
            inline_events.back().result().SerializeAsString());
}

TEST_F(GenerateDataRpcTest, UnknownModelRefIsNotFound) {
  v1::GenerateDataRequest r = GenDataRequest(true, 2);
  r.clear_onnx_model();
  r.set_model_ref(std::string(64, 'a'));
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(r, &events);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("model_ref"));
}

TEST_F(GenerateDataRpcTest, CancelStopsTheJobAndFreesTheWorker) {
  v1::GenerateDataRequest endless = GenDataRequest(true, 2);
  endless.set_iterations(1000000);
  {
    grpc::ClientContext ctx;
    auto reader = Stub()->GenerateData(&ctx, endless);
    v1::GenerateDataEvent e;
    bool generating = false;
    while (!generating && reader->Read(&e)) {
      generating = e.has_progress() && e.progress().stage() == "generate";
    }
    ASSERT_TRUE(generating);
    ctx.TryCancel();
    while (reader->Read(&e)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server has one worker: the next job runs only if the first stopped.
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(GenDataRequest(true, 2), &events);
  EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST_F(GenerateDataRpcTest, CancelledQuantizeStopsInTheGenerateStage) {
  v1::QuantizeRequest endless;
  endless.set_onnx_model(GenDataModel(true));
  endless.mutable_tpc()->set_name("imx500@4.1");
  endless.mutable_generated_calibration()->set_count(2);
  endless.mutable_generated_calibration()->set_iterations(1000000);
  auto client = client::Client::Create({.target = server_->target()});
  ASSERT_TRUE(client.ok()) << client.status();
  client::CallCanceller canceller;
  std::string last_stage;
  auto result = (*client)->Quantize(
      endless,
      [&](const v1::JobEvent& e) {
        if (!e.has_progress()) return;
        last_stage = e.progress().stage();
        // A report from inside the generation loop: cancel there.
        if (last_stage == "generate" && e.progress().fraction() > 0) {
          canceller.Cancel();
        }
      },
      {.canceller = &canceller});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
  EXPECT_EQ(last_stage, "generate");
  // The server has one worker: the next job runs only if this one stopped.
  std::vector<v1::GenerateDataEvent> events;
  grpc::Status st = Generate(GenDataRequest(true, 2), &events);
  EXPECT_TRUE(st.ok()) << st.error_message();
}

// The job reactor's heartbeats reach a GenerateData stream whose job is
// busy: here stalled in its generate stage (--fault_injection) until the
// client cancels, so nothing but heartbeats can arrive after the stall's
// warning.
TEST(GenerateDataStreamTest, HeartbeatsArriveWhileTheJobIsStalled) {
  auto server = ServerProcess::Start({"--workers=1", "--heartbeat_seconds=1",
                                      "--fault_injection=stall:generate@1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::DataGenerationService::NewStub(grpc::CreateChannel(
      (*server)->target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  // A stream without heartbeats fails here instead of hanging.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  auto reader = stub->GenerateData(&ctx, GenDataRequest(true, 2));
  testing::ExpectHeartbeatsAfterTheStall<v1::GenerateDataEvent>(reader.get());
  v1::GenerateDataEvent e;
  ctx.TryCancel();
  while (reader->Read(&e)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

}  // namespace
}  // namespace quantd::testing
