// QuantdServer: the whole server in one object (gRPC listener with health,
// reflection, TLS and limits; the worker pool; admission; uploads; metrics
// endpoint) with the lifecycle main() and the tests drive:
//
//   auto server = QuantdServer::Start(options);   // readiness SERVING
//   server->BeginDrain();      // readiness NOT_SERVING, new jobs UNAVAILABLE
//   server->Shutdown(absl::Seconds(30));  // running jobs get 30 s, then are
//                                         // cancelled; returns when done
#ifndef QUANTD_SERVER_GRPC_SERVER_H_
#define QUANTD_SERVER_GRPC_SERVER_H_

#include <grpcpp/server.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/runtime/thread_pool.h"
#include "server/admission.h"
#include "server/data_generation_service.h"
#include "server/heartbeat.h"
#include "server/metrics.h"
#include "server/pruning_service.h"
#include "server/quantization_service.h"
#include "server/server_options.h"
#include "server/service_context.h"
#include "server/tpc_catalog.h"
#include "server/upload_store.h"

namespace quantd::server {

inline constexpr char kServiceName[] = "quantd.v1.QuantizationService";

class QuantdServer {
 public:
  static absl::StatusOr<std::unique_ptr<QuantdServer>> Start(
      ServerOptions options);
  ~QuantdServer();  // Shutdown(zero grace) if not done yet

  int port() const { return port_; }
  // 0 when the metrics endpoint is disabled.
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  QuantizationServiceImpl& service() { return *service_; }

  void BeginDrain();
  void Shutdown(absl::Duration grace);

 private:
  QuantdServer() = default;
  absl::Status Init(ServerOptions options);

  std::unique_ptr<Metrics> metric_families_;
  std::unique_ptr<MetricsEndpoint> metrics_;
  std::unique_ptr<TpcCatalog> tpcs_;
  std::unique_ptr<AdmissionController> admission_;
  std::unique_ptr<UploadStore> uploads_;
  std::unique_ptr<HeartbeatTicker> heartbeats_;
  std::unique_ptr<HeartbeatTicker> progress_flusher_;
  std::unique_ptr<ThreadPool> compute_pool_;
  std::unique_ptr<ThreadPool> job_pool_;
  std::unique_ptr<ServiceContext> context_;
  std::unique_ptr<QuantizationServiceImpl> service_;
  std::unique_ptr<PruningServiceImpl> pruning_service_;
  std::unique_ptr<DataGenerationServiceImpl> data_generation_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_GRPC_SERVER_H_
