// quantd.v1.PruningService: the Prune RPC. A reactor per call checks the
// request on the gRPC thread (authorization, ValidatePruneRequest,
// admission), runs RunPruneJob on the server's job pool, and streams the
// job's progress and then its result.
#ifndef QUANTD_SERVER_PRUNING_SERVICE_H_
#define QUANTD_SERVER_PRUNING_SERVICE_H_

#include "quantd/v1/pruning_service.grpc.pb.h"
#include "server/service_context.h"

namespace quantd::server {

class PruningServiceImpl final : public v1::PruningService::CallbackService {
 public:
  explicit PruningServiceImpl(ServiceContext* service) : service_(service) {}

  grpc::ServerWriteReactor<v1::PruneEvent>* Prune(
      grpc::CallbackServerContext* ctx,
      const v1::PruneRequest* request) override;

 private:
  ServiceContext* const service_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_PRUNING_SERVICE_H_
