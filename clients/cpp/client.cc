#include "clients/cpp/client.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/cpp/result_assembler.h"
#include "core/util/sha256.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace quantd::client {

void CallCanceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool CallCanceller::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void CallCanceller::Attach(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  ctx_ = ctx;
  if (cancelled_) ctx->TryCancel();
}

void CallCanceller::Detach() {
  absl::MutexLock lock(&mu_);
  ctx_ = nullptr;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    const ChannelOptions& options) {
  auto channel = CreateChannel(options);
  if (!channel.ok()) return channel.status();
  return std::make_unique<Client>(*std::move(channel), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ChannelOptions& options)
    : channel_(std::move(channel)),
      stub_(v1::QuantizationService::NewStub(channel_)),
      auth_token_(options.auth_token),
      max_message_bytes_(options.max_message_bytes) {}

void Client::PrepareContext(grpc::ClientContext& ctx,
                            absl::Time deadline) const {
  PrepareCallContext(auth_token_, deadline, &ctx);
}

absl::StatusOr<v1::UploadReceipt> Client::Upload(v1::UploadKind kind,
                                                 const std::string& content,
                                                 absl::Time deadline) {
  grpc::ClientContext ctx;
  PrepareContext(ctx, deadline);
  v1::UploadReceipt receipt;
  std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer =
      stub_->UploadModel(&ctx, &receipt);
  // Below 1 MiB so that any server (--max_message_mb >= 1) accepts a chunk
  // with its envelope, whatever its limit.
  const int64_t chunk_bytes = std::clamp<int64_t>(
      max_message_bytes_ - (64 << 10), 1 << 10, (1 << 20) - (64 << 10));
  const int64_t total = static_cast<int64_t>(content.size());
  const std::string digest = Sha256Hex(content);
  for (int64_t offset = 0; offset < total; offset += chunk_bytes) {
    v1::UploadChunk chunk;
    if (offset == 0) {
      chunk.set_kind(kind);
      chunk.set_total_size(total);
      chunk.set_sha256(digest);
    }
    chunk.set_offset(offset);
    chunk.set_data(content.substr(offset, chunk_bytes));
    // false: the server has answered early with an error; Finish() below
    // tells which.
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  absl::Status status = FromGrpcStatus(writer->Finish());
  if (!status.ok()) return status;
  return receipt;
}

absl::StatusOr<v1::QuantizeResult> Client::Quantize(
    const v1::QuantizeRequest& original, const EventCallback& on_event,
    const QuantizeOptions& options) {
  const int64_t inline_limit = options.inline_limit_bytes > 0
                                   ? options.inline_limit_bytes
                                   : max_message_bytes_ - (1 << 20);
  if (static_cast<int64_t>(original.ByteSizeLong()) <= inline_limit) {
    return Call(original, on_event, options);
  }
  // Too large for one message: upload the model, then if needed the samples,
  // and send references instead (on a copy).
  v1::QuantizeRequest request = original;
  if (!request.onnx_model().empty()) {
    auto receipt =
        Upload(v1::UPLOAD_KIND_MODEL, request.onnx_model(), options.deadline);
    if (!receipt.ok()) return receipt.status();
    request.clear_onnx_model();
    request.set_model_ref(receipt->sha256());
  }
  if (static_cast<int64_t>(request.ByteSizeLong()) > inline_limit &&
      request.calibration_samples_size() > 0) {
    v1::SampleSet samples;
    samples.mutable_samples()->Swap(request.mutable_calibration_samples());
    auto receipt = Upload(v1::UPLOAD_KIND_SAMPLES, samples.SerializeAsString(),
                          options.deadline);
    if (!receipt.ok()) return receipt.status();
    request.set_samples_ref(receipt->sha256());
  }
  return Call(request, on_event, options);
}

absl::StatusOr<v1::QuantizeResult> Client::Call(
    const v1::QuantizeRequest& request, const EventCallback& on_event,
    const QuantizeOptions& options) {
  grpc::ClientContext ctx;
  PrepareContext(ctx, options.deadline);
  if (options.canceller != nullptr) options.canceller->Attach(&ctx);
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader =
      stub_->Quantize(&ctx, request);
  v1::JobEvent event;
  std::optional<v1::QuantizeResult> result;
  ResultAssembler assembler;
  absl::Status chunk_status;
  while (reader->Read(&event)) {
    if (event.has_result_chunk() && chunk_status.ok()) {
      chunk_status = assembler.Add(event.result_chunk());
    }
    if (on_event) on_event(event);
    if (event.has_result()) result = std::move(*event.mutable_result());
  }
  const grpc::Status finish = reader->Finish();
  if (options.canceller != nullptr) options.canceller->Detach();
  if (!finish.ok()) return FromGrpcStatus(finish);
  if (!chunk_status.ok()) return chunk_status;
  if (result.has_value()) return *std::move(result);
  if (assembler.started()) return assembler.Finish();
  return absl::InternalError("Quantize stream ended without a result");
}

namespace {

template <typename Response, typename Call>
absl::StatusOr<Response> Unary(const Client& client, absl::Duration timeout,
                               Call call) {
  grpc::ClientContext ctx;
  client.PrepareContext(ctx, absl::Now() + timeout);
  Response response;
  absl::Status status = FromGrpcStatus(call(&ctx, &response));
  if (!status.ok()) return status;
  return response;
}

}  // namespace

absl::StatusOr<v1::ListTpcsResponse> Client::ListTpcs() {
  return Unary<v1::ListTpcsResponse>(
      *this, unary_timeout, [&](grpc::ClientContext* ctx, auto* response) {
        return stub_->ListTpcs(ctx, v1::ListTpcsRequest(), response);
      });
}

absl::StatusOr<v1::GetTpcResponse> Client::GetTpc(const std::string& name) {
  v1::GetTpcRequest request;
  request.set_name(name);
  return Unary<v1::GetTpcResponse>(
      *this, unary_timeout, [&](grpc::ClientContext* ctx, auto* response) {
        return stub_->GetTpc(ctx, request, response);
      });
}

absl::StatusOr<v1::ValidateTpcResponse> Client::ValidateTpc(
    const v1::ValidateTpcRequest& request) {
  return Unary<v1::ValidateTpcResponse>(
      *this, unary_timeout, [&](grpc::ClientContext* ctx, auto* response) {
        return stub_->ValidateTpc(ctx, request, response);
      });
}

absl::StatusOr<v1::ServerInfo> Client::GetServerInfo() {
  return Unary<v1::ServerInfo>(
      *this, unary_timeout, [&](grpc::ClientContext* ctx, auto* response) {
        return stub_->GetServerInfo(ctx, v1::GetServerInfoRequest(), response);
      });
}

absl::StatusOr<std::string> Client::Health(const std::string& service) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  auto response = Unary<grpc::health::v1::HealthCheckResponse>(
      *this, unary_timeout, [&](grpc::ClientContext* ctx, auto* r) {
        return health->Check(ctx, request, r);
      });
  if (!response.ok()) return response.status();
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response->status());
}

}  // namespace quantd::client
