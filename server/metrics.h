// Prometheus metrics of the server and their HTTP endpoint.
//
// Names follow Prometheus conventions (base units, _total counters, bounded
// labels) and go-grpc-prometheus for the grpc_server_* families, so existing
// dashboards work. Never label by job id, model or free text.
#ifndef QUANTD_SERVER_METRICS_H_
#define QUANTD_SERVER_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace quantd::server {

// go-grpc-prometheus grpc_type values.
enum class RpcType { kUnary, kClientStream, kServerStream, kBidiStream };

// go-grpc-prometheus spelling of a code ("OK", "InvalidArgument", ...).
std::string GrpcCodeLabel(int code);

class ScrapeGauges;

class Metrics {
 public:
  Metrics(const std::string& version, const std::string& git_sha);

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }
  // What /metrics serves: the registry, the process_* collector (read from
  // /proc at each scrape) and the scrape gauges.
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;

  // quantd_jobs_total{status}: status is the lowercase code name.
  void JobFinished(absl::StatusCode code);
  // quantd_job_duration_seconds{stage}: time spent in one stage; "queued"
  // is the wait for a worker.
  void ObserveStage(const std::string& stage, double seconds);
  void SetQueueDepth(int64_t queued);
  void SetWorkersBusy(int64_t running);
  // quantd_memory_reserved_bytes: what admitted jobs hold of the budget.
  void SetMemoryReserved(int64_t bytes);
  // The configured capacity, set once: quantd_workers,
  // quantd_queue_capacity and quantd_memory_budget_bytes (0 = no budget).
  void SetCapacity(int workers, int max_queued_jobs,
                   int64_t memory_budget_bytes);
  // A gauge whose value `read` returns at each scrape, for figures owned
  // elsewhere (the upload store's bytes). `read` runs on the endpoint's
  // threads and must stay callable while the endpoint serves.
  void AddScrapeGauge(const std::string& name, const std::string& help,
                      std::function<double()> read);
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
  std::shared_ptr<prometheus::Collectable> process_collector_;
  std::shared_ptr<ScrapeGauges> scrape_gauges_;
  prometheus::Family<prometheus::Counter>& jobs_total_;
  prometheus::Family<prometheus::Histogram>& job_duration_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& workers_busy_;
  prometheus::Gauge& memory_reserved_;
  prometheus::Gauge& memory_budget_;
  prometheus::Gauge& workers_;
  prometheus::Gauge& queue_capacity_;
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

// Serves `collectables` at http://<bind_address>/metrics.
class MetricsEndpoint {
 public:
  // bind_address "host:port"; port 0 picks a free port.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& bind_address,
      const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables);
  int port() const;
  // Stops the listener within milliseconds (civetweb alone takes up to 2 s).
  ~MetricsEndpoint();

 private:
  MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer,
                  std::string host)
      : exposer_(std::move(exposer)), host_(std::move(host)) {}
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;  // the bound address, to connect to when stopping
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_METRICS_H_
