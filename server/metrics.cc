#include "server/metrics.h"

#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace quantd::server {
namespace {

// Stages take from milliseconds (import of a tiny model) to tens of minutes
// (mixed precision or GPTQ on a large one).
const prometheus::Histogram::BucketBoundaries kStageBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,    2.5,
    5,     10,   30,    60,   120, 300,  600, 1800, 3600};

// go-grpc-prometheus's DefBuckets (Prometheus client defaults) plus longer
// ones, since Quantize streams last as long as their job.
const prometheus::Histogram::BucketBoundaries kRpcBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,    2.5,
    5,     10,   30,    60,   120, 300,  600, 1800, 3600};

const char* RpcTypeLabel(RpcType type) {
  switch (type) {
    case RpcType::kUnary:
      return "unary";
    case RpcType::kClientStream:
      return "client_stream";
    case RpcType::kServerStream:
      return "server_stream";
    case RpcType::kBidiStream:
      return "bidi_stream";
  }
  return "unary";
}

constexpr char kServiceName[] = "quantd.v1.QuantizationService";

}  // namespace

std::string GrpcCodeLabel(int code) {
  static const char* const kNames[] = {"OK",
                                       "Canceled",
                                       "Unknown",
                                       "InvalidArgument",
                                       "DeadlineExceeded",
                                       "NotFound",
                                       "AlreadyExists",
                                       "PermissionDenied",
                                       "ResourceExhausted",
                                       "FailedPrecondition",
                                       "Aborted",
                                       "OutOfRange",
                                       "Unimplemented",
                                       "Internal",
                                       "Unavailable",
                                       "DataLoss",
                                       "Unauthenticated"};
  if (code < 0 || code > 16) return "Unknown";
  return kNames[code];
}

Metrics::Metrics(const std::string& version, const std::string& git_sha)
    : registry_(std::make_shared<prometheus::Registry>()),
      jobs_total_(prometheus::BuildCounter()
                      .Name("quantd_jobs_total")
                      .Help("Quantization jobs finished, by final status.")
                      .Register(*registry_)),
      job_duration_(prometheus::BuildHistogram()
                        .Name("quantd_job_duration_seconds")
                        .Help("Time jobs spend in each stage.")
                        .Register(*registry_)),
      queue_depth_(prometheus::BuildGauge()
                       .Name("quantd_queue_depth")
                       .Help("Admitted jobs waiting for a worker.")
                       .Register(*registry_)
                       .Add({})),
      workers_busy_(prometheus::BuildGauge()
                        .Name("quantd_workers_busy")
                        .Help("Workers running a job.")
                        .Register(*registry_)
                        .Add({})),
      tpc_cache_hits_(prometheus::BuildCounter()
                          .Name("quantd_tpc_cache_hits_total")
                          .Help("TPC registry cache hits.")
                          .Register(*registry_)
                          .Add({})),
      tpc_cache_misses_(prometheus::BuildCounter()
                            .Name("quantd_tpc_cache_misses_total")
                            .Help("TPC registry cache misses.")
                            .Register(*registry_)
                            .Add({})),
      rpc_started_(prometheus::BuildCounter()
                       .Name("grpc_server_started_total")
                       .Help("Total number of RPCs started on the server.")
                       .Register(*registry_)),
      rpc_handled_(prometheus::BuildCounter()
                       .Name("grpc_server_handled_total")
                       .Help("Total number of RPCs completed on the server, "
                             "regardless of success or failure.")
                       .Register(*registry_)),
      rpc_msg_received_(prometheus::BuildCounter()
                            .Name("grpc_server_msg_received_total")
                            .Help("Total number of RPC stream messages "
                                  "received on the server.")
                            .Register(*registry_)),
      rpc_msg_sent_(prometheus::BuildCounter()
                        .Name("grpc_server_msg_sent_total")
                        .Help("Total number of gRPC stream messages sent by "
                              "the server.")
                        .Register(*registry_)),
      rpc_handling_seconds_(
          prometheus::BuildHistogram()
              .Name("grpc_server_handling_seconds")
              .Help("Histogram of response latency (seconds) of gRPC that "
                    "had been application-level handled by the server.")
              .Register(*registry_)) {
  prometheus::BuildGauge()
      .Name("quantd_build_info")
      .Help("Always 1; the labels carry the build's version.")
      .Register(*registry_)
      .Add({{"version", version}, {"git_sha", git_sha}})
      .Set(1);
}

void Metrics::JobFinished(absl::StatusCode code) {
  jobs_total_
      .Add({{"status", absl::AsciiStrToLower(absl::StatusCodeToString(code))}})
      .Increment();
}

void Metrics::ObserveStage(const std::string& stage, double seconds) {
  job_duration_.Add({{"stage", stage}}, kStageBuckets).Observe(seconds);
}

void Metrics::SetQueueDepth(int64_t queued) {
  queue_depth_.Set(static_cast<double>(queued));
}

void Metrics::SetWorkersBusy(int64_t running) {
  workers_busy_.Set(static_cast<double>(running));
}

void Metrics::SetTpcCacheCounters(int64_t hits, int64_t misses) {
  absl::MutexLock lock(&tpc_mu_);
  if (hits > tpc_hits_seen_) {
    tpc_cache_hits_.Increment(static_cast<double>(hits - tpc_hits_seen_));
    tpc_hits_seen_ = hits;
  }
  if (misses > tpc_misses_seen_) {
    tpc_cache_misses_.Increment(static_cast<double>(misses - tpc_misses_seen_));
    tpc_misses_seen_ = misses;
  }
}

prometheus::Labels Metrics::RpcLabels(RpcType type, const std::string& method) {
  return {{"grpc_type", RpcTypeLabel(type)},
          {"grpc_service", kServiceName},
          {"grpc_method", method}};
}

void Metrics::RpcStarted(RpcType type, const std::string& method) {
  rpc_started_.Add(RpcLabels(type, method)).Increment();
}

void Metrics::RpcMsgReceived(RpcType type, const std::string& method) {
  rpc_msg_received_.Add(RpcLabels(type, method)).Increment();
}

void Metrics::RpcMsgSent(RpcType type, const std::string& method) {
  rpc_msg_sent_.Add(RpcLabels(type, method)).Increment();
}

void Metrics::RpcHandled(RpcType type, const std::string& method, int grpc_code,
                         double seconds) {
  prometheus::Labels labels = RpcLabels(type, method);
  rpc_handling_seconds_.Add(labels, kRpcBuckets).Observe(seconds);
  labels["grpc_code"] = GrpcCodeLabel(grpc_code);
  rpc_handled_.Add(labels).Increment();
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& bind_address,
    std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(bind_address, 2);
  } catch (const std::exception& e) {
    // civetweb reports bind failures by throwing.
    return absl::UnavailableError(absl::StrCat(
        "--metrics_port: cannot listen on ", bind_address, ": ", e.what()));
  }
  exposer->RegisterCollectable(registry);
  return std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(std::move(exposer)));
}

int MetricsEndpoint::port() const {
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace quantd::server
