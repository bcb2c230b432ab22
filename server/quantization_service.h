// quantd.v1.QuantizationService on gRPC's callback API. Handlers never block:
// Quantize runs on the one job reactor (JobStreamReactor with QuantizeRpc),
// UploadModel on its own reactor, the unary RPCs answer from in-memory
// state.
#ifndef QUANTD_SERVER_QUANTIZATION_SERVICE_H_
#define QUANTD_SERVER_QUANTIZATION_SERVICE_H_

#include "quantd/v1/quantization_service.grpc.pb.h"
#include "server/service_context.h"

namespace quantd::server {

class QuantizationServiceImpl final
    : public v1::QuantizationService::CallbackService {
 public:
  // Installs Quantize's handler (OwnedRequestStreamingHandler): its
  // reactor gets the request as mutable, and the generated
  // Quantize(ctx, const QuantizeRequest*) is never called.
  explicit QuantizationServiceImpl(ServiceContext* service);

  grpc::ServerReadReactor<v1::UploadChunk>* UploadModel(
      grpc::CallbackServerContext* ctx, v1::UploadReceipt* receipt) override;
  grpc::ServerUnaryReactor* ListTpcs(grpc::CallbackServerContext* ctx,
                                     const v1::ListTpcsRequest* request,
                                     v1::ListTpcsResponse* response) override;
  grpc::ServerUnaryReactor* GetTpc(grpc::CallbackServerContext* ctx,
                                   const v1::GetTpcRequest* request,
                                   v1::GetTpcResponse* response) override;
  grpc::ServerUnaryReactor* ValidateTpc(
      grpc::CallbackServerContext* ctx, const v1::ValidateTpcRequest* request,
      v1::ValidateTpcResponse* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(
      grpc::CallbackServerContext* ctx, const v1::GetServerInfoRequest* request,
      v1::ServerInfo* response) override;

  // The ServerInfo answer; exposed for tests and the startup log.
  v1::ServerInfo Info() const;

 private:
  // Runs `handler` if the call is authorized and finishes the call with its
  // status, counting it in the grpc_server_* metrics.
  template <typename Handler>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx,
                                  const char* method, Handler handler);

  ServiceContext* const service_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_QUANTIZATION_SERVICE_H_
