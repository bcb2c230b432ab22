// quantd.v1.DataGenerationService: the GenerateData RPC on the one job
// reactor (JobStreamReactor): its checks are the request's fields and the
// upload it names, its job RunGenerateDataJob, its result the images, a few
// per result event.
#ifndef QUANTD_SERVER_DATA_GENERATION_SERVICE_H_
#define QUANTD_SERVER_DATA_GENERATION_SERVICE_H_

#include "quantd/v1/data_generation_service.grpc.pb.h"
#include "server/service_context.h"

namespace quantd::server {

class DataGenerationServiceImpl final
    : public v1::DataGenerationService::CallbackService {
 public:
  explicit DataGenerationServiceImpl(ServiceContext* service)
      : service_(service) {}

  grpc::ServerWriteReactor<v1::GenerateDataEvent>* GenerateData(
      grpc::CallbackServerContext* ctx,
      const v1::GenerateDataRequest* request) override;

 private:
  ServiceContext* const service_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_DATA_GENERATION_SERVICE_H_
