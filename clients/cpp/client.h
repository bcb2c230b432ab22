// quantd C++ client.
//
//   auto client = quantd::client::Client::Create({.target =
//   "localhost:50051"}); auto result = (*client)->Quantize(request, [](const
//   v1::JobEvent& e) {
//     if (e.has_progress()) Draw(e.progress());
//   }, {.deadline = absl::Now() + absl::Minutes(30)});
//
// Quantize uploads models and sample sets that do not fit one message
// (UploadModel, content-addressed, so repeats are free) and reassembles
// results the server streams in chunks. Errors come back as absl::Status
// with the server's code and message.
#ifndef QUANTD_CLIENTS_CPP_CLIENT_H_
#define QUANTD_CLIENTS_CPP_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/cpp/channel.h"
#include "quantd/v1/quantization_service.grpc.pb.h"

namespace quantd::client {

// Cancels an ongoing Quantize from another thread (e.g. on Ctrl-C).
class CallCanceller {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class Client;
  void Attach(grpc::ClientContext* ctx);
  void Detach();

  mutable absl::Mutex mu_;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// grpc::Status -> absl::Status (same code numbers).
absl::Status FromGrpcStatus(const grpc::Status& status);

struct QuantizeOptions {
  absl::Time deadline = absl::InfiniteFuture();
  // Requests larger than this send the model (and samples) through
  // UploadModel first; 0 = the channel's max message size minus 1 MiB.
  int64_t inline_limit_bytes = 0;
  CallCanceller* canceller = nullptr;
};

class Client {
 public:
  using EventCallback = std::function<void(const v1::JobEvent&)>;

  using QuantizeOptions = client::QuantizeOptions;

  static absl::StatusOr<std::unique_ptr<Client>> Create(
      const ChannelOptions& options);
  Client(std::shared_ptr<grpc::Channel> channel, const ChannelOptions& options);

  // Runs a job; `on_event` sees every event in order (accepted first). The
  // request is copied only when its model or samples must be uploaded.
  absl::StatusOr<v1::QuantizeResult> Quantize(
      const v1::QuantizeRequest& request,
      const EventCallback& on_event = nullptr,
      const QuantizeOptions& options = {});

  // Uploads content in chunks; returns the receipt whose sha256 goes into
  // QuantizeRequest.model_ref / samples_ref.
  absl::StatusOr<v1::UploadReceipt> Upload(v1::UploadKind kind,
                                           const std::string& content,
                                           absl::Time deadline);

  absl::StatusOr<v1::ListTpcsResponse> ListTpcs();
  absl::StatusOr<v1::GetTpcResponse> GetTpc(const std::string& name);
  absl::StatusOr<v1::ValidateTpcResponse> ValidateTpc(
      const v1::ValidateTpcRequest& request);
  absl::StatusOr<v1::ServerInfo> GetServerInfo();
  // grpc.health.v1 status name ("SERVING", "NOT_SERVING", ...) of `service`
  // ("" = the whole server).
  absl::StatusOr<std::string> Health(const std::string& service = "");

  v1::QuantizationService::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Adds the bearer token and deadline to a context (for direct stub use).
  void PrepareContext(grpc::ClientContext& ctx, absl::Time deadline) const;

  // Unary calls use this deadline.
  absl::Duration unary_timeout = absl::Seconds(30);

 private:
  // The Quantize stream for a request that fits in one message.
  absl::StatusOr<v1::QuantizeResult> Call(const v1::QuantizeRequest& request,
                                          const EventCallback& on_event,
                                          const QuantizeOptions& options);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::QuantizationService::Stub> stub_;
  const std::string auth_token_;
  const int64_t max_message_bytes_;
};

}  // namespace quantd::client

#endif  // QUANTD_CLIENTS_CPP_CLIENT_H_
