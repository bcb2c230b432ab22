// Prometheus metrics of the server and their HTTP endpoint.
//
// Names follow Prometheus conventions (base units, _total counters, bounded
// labels) and go-grpc-prometheus for the grpc_server_* families, so existing
// dashboards work. Never label by job id, model or free text.
#ifndef QUANTD_SERVER_METRICS_H_
#define QUANTD_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace quantd::server {

// go-grpc-prometheus grpc_type values.
enum class RpcType { kUnary, kClientStream, kServerStream, kBidiStream };

// go-grpc-prometheus spelling of a code ("OK", "InvalidArgument", ...).
std::string GrpcCodeLabel(int code);

class Metrics {
 public:
  Metrics(const std::string& version, const std::string& git_sha);

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  // quantd_jobs_total{status}: status is the lowercase code name.
  void JobFinished(absl::StatusCode code);
  // quantd_job_duration_seconds{stage}: time spent in one stage; "queued"
  // is the wait for a worker.
  void ObserveStage(const std::string& stage, double seconds);
  void SetQueueDepth(int64_t queued);
  void SetWorkersBusy(int64_t running);
  // Mirrors the TPC registry's cumulative counters.
  void SetTpcCacheCounters(int64_t hits, int64_t misses);

  void RpcStarted(RpcType type, const std::string& method);
  void RpcMsgReceived(RpcType type, const std::string& method);
  void RpcMsgSent(RpcType type, const std::string& method);
  void RpcHandled(RpcType type, const std::string& method, int grpc_code,
                  double seconds);

 private:
  static prometheus::Labels RpcLabels(RpcType type, const std::string& method);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& jobs_total_;
  prometheus::Family<prometheus::Histogram>& job_duration_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& workers_busy_;
  prometheus::Counter& tpc_cache_hits_;
  prometheus::Counter& tpc_cache_misses_;
  prometheus::Family<prometheus::Counter>& rpc_started_;
  prometheus::Family<prometheus::Counter>& rpc_handled_;
  prometheus::Family<prometheus::Counter>& rpc_msg_received_;
  prometheus::Family<prometheus::Counter>& rpc_msg_sent_;
  prometheus::Family<prometheus::Histogram>& rpc_handling_seconds_;

  absl::Mutex tpc_mu_;
  int64_t tpc_hits_seen_ ABSL_GUARDED_BY(tpc_mu_) = 0;
  int64_t tpc_misses_seen_ ABSL_GUARDED_BY(tpc_mu_) = 0;
};

// Serves `registry` at http://<bind_address>/metrics.
class MetricsEndpoint {
 public:
  // bind_address "host:port"; port 0 picks a free port.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& bind_address,
      std::shared_ptr<prometheus::Registry> registry);
  int port() const;

 private:
  explicit MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer)
      : exposer_(std::move(exposer)) {}
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_METRICS_H_
