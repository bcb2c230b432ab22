// quantd.v1.PruningService: the Prune RPC on the one job reactor
// (JobStreamReactor): its checks are ValidatePruneRequest, its job
// RunPruneJob, its result the PruneResult (in chunks when large).
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
