// quantd.v1.DataGenerationService: the GenerateData RPC. A reactor per call
// (JobStreamReactor) checks the request on the gRPC thread (authorization,
// the request's fields, the upload it names, admission), runs
// RunGenerateDataJob on the server's job pool, and streams the job's
// progress and then the images, a few per result event.
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
