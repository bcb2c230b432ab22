#include "server/metrics.h"

#include <netdb.h>
#include <prometheus/metric_family.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/process_stats.h"

namespace quantd::server {
namespace {

// Stages take from a millisecond (import of a tiny model, a job that
// waits for no worker) to tens of minutes (mixed precision or GPTQ on a
// large one).
const prometheus::Histogram::BucketBoundaries kStageBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,
    2.5,   5,      10,    30,   60,    120,  300, 600,  1800, 3600};

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

prometheus::MetricFamily OneSample(std::string name, std::string help,
                                   prometheus::MetricType type, double value) {
  prometheus::ClientMetric sample;
  if (type == prometheus::MetricType::Counter) {
    sample.counter.value = value;
  } else {
    sample.gauge.value = value;
  }
  return {std::move(name), std::move(help), type, {sample}};
}

// The standard process_* families (the names of the Go and Python clients'
// process collectors), read from /proc at each scrape.
class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    const absl::StatusOr<ProcessStats> s = ReadProcessStats();
    if (!s.ok()) return {};  // no /proc: the families are absent
    using prometheus::MetricType;
    return {
        OneSample("process_cpu_seconds_total",
                  "Total user and system CPU time spent in seconds.",
                  MetricType::Counter, s->cpu_seconds),
        OneSample("process_resident_memory_bytes",
                  "Resident memory size in bytes.", MetricType::Gauge,
                  static_cast<double>(s->resident_memory_bytes)),
        OneSample("process_virtual_memory_bytes",
                  "Virtual memory size in bytes.", MetricType::Gauge,
                  static_cast<double>(s->virtual_memory_bytes)),
        OneSample("process_open_fds", "Number of open file descriptors.",
                  MetricType::Gauge, static_cast<double>(s->open_fds)),
        OneSample("process_max_fds", "Maximum number of open file descriptors.",
                  MetricType::Gauge, s->max_fds),
        OneSample("process_start_time_seconds",
                  "Start time of the process since unix epoch in seconds.",
                  MetricType::Gauge, s->start_time_seconds),
    };
  }
};

}  // namespace

// Gauges read at scrape time from their owners.
class ScrapeGauges : public prometheus::Collectable {
 public:
  void Add(std::string name, std::string help, std::function<double()> read) {
    absl::MutexLock lock(&mu_);
    gauges_.push_back({std::move(name), std::move(help), std::move(read)});
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::MutexLock lock(&mu_);
    std::vector<prometheus::MetricFamily> families;
    families.reserve(gauges_.size());
    for (const Gauge& g : gauges_) {
      families.push_back(
          OneSample(g.name, g.help, prometheus::MetricType::Gauge, g.read()));
    }
    return families;
  }

 private:
  struct Gauge {
    std::string name;
    std::string help;
    std::function<double()> read;
  };
  mutable absl::Mutex mu_;
  std::vector<Gauge> gauges_ ABSL_GUARDED_BY(mu_);
};

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
      process_collector_(std::make_shared<ProcessCollector>()),
      scrape_gauges_(std::make_shared<ScrapeGauges>()),
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
      memory_reserved_(prometheus::BuildGauge()
                           .Name("quantd_memory_reserved_bytes")
                           .Help("Memory budget held by admitted jobs.")
                           .Register(*registry_)
                           .Add({})),
      memory_budget_(prometheus::BuildGauge()
                         .Name("quantd_memory_budget_bytes")
                         .Help("Memory budget of all admitted jobs "
                               "(--max_job_memory_mb); 0 = none.")
                         .Register(*registry_)
                         .Add({})),
      workers_(prometheus::BuildGauge()
                   .Name("quantd_workers")
                   .Help("Jobs that run at once (--workers).")
                   .Register(*registry_)
                   .Add({})),
      queue_capacity_(prometheus::BuildGauge()
                          .Name("quantd_queue_capacity")
                          .Help("Jobs that may wait for a worker "
                                "(--max_queued_jobs).")
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

void Metrics::SetMemoryReserved(int64_t bytes) {
  memory_reserved_.Set(static_cast<double>(bytes));
}

void Metrics::SetCapacity(int workers, int max_queued_jobs,
                          int64_t memory_budget_bytes) {
  workers_.Set(workers);
  queue_capacity_.Set(max_queued_jobs);
  memory_budget_.Set(static_cast<double>(memory_budget_bytes));
}

void Metrics::AddScrapeGauge(const std::string& name, const std::string& help,
                             std::function<double()> read) {
  scrape_gauges_->Add(name, help, std::move(read));
}

std::vector<std::weak_ptr<prometheus::Collectable>> Metrics::collectables()
    const {
  return {registry_, process_collector_, scrape_gauges_};
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
  // The service that defines the method (proto/quantd/v1/*_service.proto).
  const char* service = method == "Prune" ? "quantd.v1.PruningService"
                        : method == "GenerateData"
                            ? "quantd.v1.DataGenerationService"
                            : kServiceName;
  return {{"grpc_type", RpcTypeLabel(type)},
          {"grpc_service", service},
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
    const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(bind_address, 2);
  } catch (const std::exception& e) {
    // civetweb reports bind failures by throwing.
    return absl::UnavailableError(absl::StrCat(
        "--metrics_port: cannot listen on ", bind_address, ": ", e.what()));
  }
  for (const auto& collectable : collectables) {
    exposer->RegisterCollectable(collectable);
  }
  std::string host = bind_address.substr(0, bind_address.rfind(':'));
  if (host.size() > 1 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  return std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(std::move(exposer), std::move(host)));
}

namespace {

// Opens and at once closes a TCP connection to `address` (best effort).
void Poke(const addrinfo& address) {
  const int fd =
      socket(address.ai_family, address.ai_socktype, address.ai_protocol);
  if (fd < 0) return;
  (void)connect(fd, address.ai_addr, address.ai_addrlen);
  close(fd);
}

}  // namespace

MetricsEndpoint::~MetricsEndpoint() {
  // civetweb's listener thread polls its socket with a 2 s timeout and reads
  // its stop flag only between polls, so mg_stop (the Exposer's destructor)
  // would wait up to 2 s, most of a short drain's time. A
  // connection ends the poll; one is made every 10 ms until the Exposer is
  // gone (each is closed at once, so a worker that accepts one reads EOF).
  const int listening = port();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (listening <= 0 ||
      getaddrinfo(host_.c_str(), std::to_string(listening).c_str(), &hints,
                  &found) != 0) {
    found = nullptr;
  }
  std::atomic<bool> stopped{false};
  std::thread waker;
  if (found != nullptr) {
    waker = std::thread([found, &stopped] {
      while (!stopped.load()) {
        Poke(*found);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  exposer_.reset();
  stopped.store(true);
  if (waker.joinable()) waker.join();
  if (found != nullptr) freeaddrinfo(found);
}

int MetricsEndpoint::port() const {
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace quantd::server
