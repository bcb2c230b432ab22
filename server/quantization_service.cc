#include "server/quantization_service.h"

#include "absl/time/clock.h"
#include "core/executor/executor.h"
#include "google/protobuf/descriptor.h"
#include "server/owned_request_handler.h"
#include "server/quantize_rpc.h"
#include "server/status_util.h"
#include "server/upload_reactor.h"

namespace quantd::server {

template <typename Handler>
grpc::ServerUnaryReactor* QuantizationServiceImpl::Unary(
    grpc::CallbackServerContext* ctx, const char* method, Handler handler) {
  const absl::Time started = absl::Now();
  Metrics& metrics = *service_->metrics;
  metrics.RpcStarted(RpcType::kUnary, method);
  metrics.RpcMsgReceived(RpcType::kUnary, method);
  absl::Status status = service_->Authorize(*ctx);
  if (status.ok()) status = handler();
  const grpc::Status grpc_status =
      ToGrpcStatus(status, {{"rpc", method}, {"peer", ctx->peer()}});
  if (grpc_status.ok()) metrics.RpcMsgSent(RpcType::kUnary, method);
  metrics.RpcHandled(RpcType::kUnary, method,
                     static_cast<int>(grpc_status.error_code()),
                     absl::ToDoubleSeconds(absl::Now() - started));
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc_status);
  return reactor;
}

QuantizationServiceImpl::QuantizationServiceImpl(ServiceContext* service)
    : service_(service) {
  const int quantize =
      google::protobuf::DescriptorPool::generated_pool()
          ->FindServiceByName(v1::QuantizationService::service_full_name())
          ->FindMethodByName("Quantize")
          ->index();
  MarkMethodCallback(
      quantize,
      new OwnedRequestStreamingHandler<v1::QuantizeRequest, v1::JobEvent>(
          [this](grpc::CallbackServerContext* ctx,
                 v1::QuantizeRequest* request) {
            return JobStreamReactor<QuantizeRpc>::Start(service_, ctx, request);
          }));
}

grpc::ServerReadReactor<v1::UploadChunk>* QuantizationServiceImpl::UploadModel(
    grpc::CallbackServerContext* ctx, v1::UploadReceipt* receipt) {
  return new UploadReactor(service_, ctx, receipt);
}

grpc::ServerUnaryReactor* QuantizationServiceImpl::ListTpcs(
    grpc::CallbackServerContext* ctx, const v1::ListTpcsRequest*,
    v1::ListTpcsResponse* response) {
  return Unary(ctx, "ListTpcs", [&] {
    for (v1::TpcSummary& s : service_->tpcs->List()) {
      *response->add_tpcs() = std::move(s);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* QuantizationServiceImpl::GetTpc(
    grpc::CallbackServerContext* ctx, const v1::GetTpcRequest* request,
    v1::GetTpcResponse* response) {
  return Unary(ctx, "GetTpc", [&]() -> absl::Status {
    auto found = service_->tpcs->Get(request->name());
    if (!found.ok()) return found.status();
    *response = *std::move(found);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* QuantizationServiceImpl::ValidateTpc(
    grpc::CallbackServerContext* ctx, const v1::ValidateTpcRequest* request,
    v1::ValidateTpcResponse* response) {
  return Unary(ctx, "ValidateTpc", [&] {
    *response = service_->tpcs->Validate(*request);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* QuantizationServiceImpl::GetServerInfo(
    grpc::CallbackServerContext* ctx, const v1::GetServerInfoRequest*,
    v1::ServerInfo* response) {
  return Unary(ctx, "GetServerInfo", [&] {
    *response = Info();
    return absl::OkStatus();
  });
}

v1::ServerInfo QuantizationServiceImpl::Info() const {
  const ServerOptions& o = service_->options;
  v1::ServerInfo info;
  info.set_version(o.version);
  info.set_git_sha(o.git_sha);
  v1::ServerLimits* limits = info.mutable_limits();
  limits->set_max_receive_message_bytes(service_->max_message_bytes());
  limits->set_max_send_message_bytes(service_->max_message_bytes());
  limits->set_max_upload_bytes(o.max_upload_mb << 20);
  limits->set_upload_store_bytes(o.upload_store_mb << 20);
  limits->set_max_job_memory_bytes(o.max_job_memory_mb << 20);
  limits->set_max_model_bytes(o.max_model_mb << 20);
  limits->set_max_nodes(o.max_nodes);
  limits->set_max_tensor_elements(o.max_tensor_elements);
  limits->set_max_samples(o.max_samples);
  limits->set_max_sample_bytes(o.max_sample_mb << 20);
  limits->set_max_running_jobs(o.workers);
  limits->set_max_queued_jobs(o.max_queued_jobs);
  limits->set_max_receive_memory_bytes(o.max_receive_memory_mb << 20);
  limits->set_max_tpc_json_bytes(o.max_tpc_json_kb << 10);
  info.set_workers(o.workers);
  info.set_max_queued_jobs(o.max_queued_jobs);
  const AdmissionController::Snapshot now = service_->admission->snapshot();
  info.set_queue_depth(now.queued);
  info.set_workers_busy(now.running);
  for (const std::string& op : SupportedOps()) info.add_supported_ops(op);
  for (v1::TpcSummary& s : service_->tpcs->List()) {
    *info.add_tpcs() = std::move(s);
  }
  info.set_heartbeat_seconds(o.heartbeat_seconds);
  info.set_quantize_available(true);
  return info;
}

}  // namespace quantd::server
