// OwnedRequestStreamingHandler on a real in-process gRPC server: the
// reactor factory gets the call's own request, mutable, with what the
// client sent, and may free parts of it while the call goes on.
#include "server/owned_request_handler.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "quantd/v1/pruning_service.grpc.pb.h"

namespace quantd::server {
namespace {

// Answers with one warning naming the request id and how many model bytes
// the request still holds when the answer is written.
class AnswerReactor final : public grpc::ServerWriteReactor<v1::PruneEvent> {
 public:
  explicit AnswerReactor(const v1::PruneRequest* request) {
    event_.mutable_warning()->set_message(
        request->request_id() + ":" +
        std::to_string(request->onnx_model().size()));
    StartWriteAndFinish(&event_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  v1::PruneEvent event_;
};

class FreeingPruneService final : public v1::PruningService::CallbackService {
 public:
  FreeingPruneService() {
    MarkMethodCallback(
        0, new OwnedRequestStreamingHandler<v1::PruneRequest, v1::PruneEvent>(
               [this](grpc::CallbackServerContext*, v1::PruneRequest* request) {
                 model_seen_ = request->onnx_model();
                 std::string().swap(*request->mutable_onnx_model());
                 return new AnswerReactor(request);
               }));
  }
  std::string model_seen_;
};

TEST(OwnedRequestHandlerTest, TheFactoryGetsTheCallsOwnRequestMutable) {
  FreeingPruneService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::PruningService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  for (const std::string id : {"first", "second"}) {
    v1::PruneRequest request;
    request.set_request_id(id);
    request.set_onnx_model(std::string(1000, 'm') + id);
    grpc::ClientContext ctx;
    auto reader = stub->Prune(&ctx, request);
    v1::PruneEvent event;
    ASSERT_TRUE(reader->Read(&event));
    // The reactor saw the request after the factory freed its model.
    EXPECT_EQ(event.warning().message(), id + ":0");
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(service.model_seen_, std::string(1000, 'm') + id);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace quantd::server
