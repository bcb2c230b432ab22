#include "server/grpc_server.h"

#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/runtime/cpu_count.h"
#include "server/auth.h"
#include "server/json_log.h"
#include "server/memory_budget.h"

namespace quantd::server {
namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(
    const ServerOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key must be given together");
  }
  if (o.tls_cert.empty()) {
    if (!o.tls_client_ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  auto cert = ReadPem("--tls_cert", o.tls_cert);
  if (!cert.ok()) return cert.status();
  auto key = ReadPem("--tls_key", o.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(
      o.tls_client_ca.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!o.tls_client_ca.empty()) {
    auto ca = ReadPem("--tls_client_ca", o.tls_client_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(ssl);
}

// Linking grpc++_reflection registers its plugin for every ServerBuilder
// (a static initializer), so reflection was served whatever the flag said;
// this option takes the plugin out again.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    plugins->erase(
        std::remove_if(plugins->begin(), plugins->end(),
                       [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
                         return p->name() == "proto_server_reflection";
                       }),
        plugins->end());
  }
};

absl::Status CheckOptions(const ServerOptions& o) {
  const struct {
    const char* flag;
    int64_t value;
    int64_t min;
  } checks[] = {
      {"--port", o.port, 0},
      {"--workers", o.workers, 1},
      {"--compute_threads", o.compute_threads, -1},
      {"--max_queued_jobs", o.max_queued_jobs, 0},
      {"--max_job_memory_mb", o.max_job_memory_mb, -1},
      {"--max_message_mb", o.max_message_mb, 1},
      {"--max_upload_mb", o.max_upload_mb, 1},
      {"--upload_store_mb", o.upload_store_mb, 1},
      {"--upload_ttl_seconds", o.upload_ttl_seconds, 1},
      {"--max_receive_memory_mb", o.max_receive_memory_mb, 0},
      {"--max_tpc_json_kb", o.max_tpc_json_kb, 1},
      {"--heartbeat_seconds", o.heartbeat_seconds, 1},
      {"--drain_delay_seconds", o.drain_delay_seconds, 0},
      {"--drain_seconds", o.drain_seconds, 0},
      {"--max_model_mb", o.max_model_mb, 1},
      {"--max_nodes", o.max_nodes, 1},
      {"--max_tensor_elements", o.max_tensor_elements, 1},
      {"--max_samples", o.max_samples, 1},
      {"--max_sample_mb", o.max_sample_mb, 1},
  };
  for (const auto& c : checks) {
    if (c.value < c.min) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.flag, "=", c.value, ": must be >= ", c.min));
    }
  }
  if (o.port > 65535 || o.metrics_port > 65535) {
    return absl::InvalidArgumentError("--port / --metrics_port: > 65535");
  }
  // protobuf cannot parse a message of 2 GiB or more.
  if (o.max_message_mb >= 2048) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_mb=", o.max_message_mb,
                     ": must be < 2048 (protobuf's 2 GiB limit)"));
  }
  return absl::OkStatus();
}

// host:port for the listening socket (IPv6 literals bracketed).
std::string ListenAddress(const ServerOptions& o) {
  return absl::StrCat(o.listen_address.find(':') != std::string::npos &&
                              o.listen_address.front() != '['
                          ? absl::StrCat("[", o.listen_address, "]")
                          : o.listen_address,
                      ":", o.port);
}

// Message sizes, the receive-memory quota and the keepalive / connection
// channel arguments (a value <= 0 keeps gRPC's default).
void SetTransportLimits(const ServerOptions& o, grpc::ServerBuilder* builder) {
  const int max_bytes = static_cast<int>(o.max_message_mb << 20);
  builder->SetMaxReceiveMessageSize(max_bytes);
  builder->SetMaxSendMessageSize(max_bytes);
  // Bounds the transport's buffers of requests still arriving (the job
  // budget only sees a request once it is whole).
  grpc::ResourceQuota quota("quantd_receive");
  quota.Resize(static_cast<size_t>(o.max_receive_memory_mb << 20));
  builder->SetResourceQuota(quota);
  const auto arg = [builder](const char* name, int64_t value) {
    if (value > 0) {
      builder->AddChannelArgument(
          name, static_cast<int>(std::min<int64_t>(value, INT32_MAX)));
    }
  };
  arg(GRPC_ARG_KEEPALIVE_TIME_MS, o.keepalive_time_ms);
  arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, o.keepalive_timeout_ms);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                              o.keepalive_permit_without_calls ? 1 : 0);
  arg(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      o.min_recv_ping_interval_ms);
  arg(GRPC_ARG_MAX_CONNECTION_IDLE_MS, o.max_connection_idle_ms);
  arg(GRPC_ARG_MAX_CONNECTION_AGE_MS, o.max_connection_age_ms);
  arg(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, o.max_connection_age_grace_ms);
}

// Read at scrape time; ~QuantdServer stops the endpoint before the store
// goes.
void AddUploadStoreGauges(UploadStore* uploads, Metrics* metrics) {
  metrics->AddScrapeGauge(
      "quantd_upload_store_bytes", "Bytes of stored uploads.",
      [uploads] { return static_cast<double>(uploads->bytes()); });
  metrics->AddScrapeGauge(
      "quantd_upload_store_reserved_bytes",
      "Upload store budget held by uploads in flight.",
      [uploads] { return static_cast<double>(uploads->reserved_bytes()); });
  metrics->AddScrapeGauge(
      "quantd_upload_store_budget_bytes",
      "Byte budget of the upload store (--upload_store_mb).",
      [uploads] { return static_cast<double>(uploads->options().max_bytes); });
}

// The startup line, and warnings for what is left open.
void LogListening(const ServerOptions& o, int port, int metrics_port,
                  int compute_threads, bool no_token) {
  const bool tls = !o.tls_cert.empty();
  const bool mtls = !o.tls_client_ca.empty();
  Log(LogLevel::kInfo, "listening",
      {{"address", o.listen_address},
       {"port", absl::StrCat(port)},
       {"metrics_port", absl::StrCat(metrics_port)},
       {"tls", tls ? (mtls ? "mutual" : "server") : "off"},
       {"auth", no_token ? "off" : "bearer"},
       {"workers", absl::StrCat(o.workers)},
       {"compute_threads", absl::StrCat(compute_threads)},
       {"max_queued_jobs", absl::StrCat(o.max_queued_jobs)},
       {"version", o.version}});
  if (o.enable_reflection && !no_token) {
    Log(LogLevel::kWarning,
        "server reflection answers without the token (--enable_reflection)",
        {{"address", o.listen_address}});
  }
  if (!tls || no_token) {
    Log(LogLevel::kWarning,
        absl::StrCat(
            tls ? "" : "plaintext (no TLS)", !tls && no_token ? " and " : "",
            no_token ? "unauthenticated (no token)" : "", ": serving only on ",
            o.listen_address, "; anyone who can reach it can submit jobs"),
        {{"address", o.listen_address}});
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<QuantdServer>> QuantdServer::Start(
    ServerOptions options) {
  std::unique_ptr<QuantdServer> server(new QuantdServer());
  absl::Status status = server->Init(std::move(options));
  if (!status.ok()) return status;
  return server;
}

absl::Status QuantdServer::Init(ServerOptions o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return s;
  if (o.max_job_memory_mb < 0) o.max_job_memory_mb = DefaultJobMemoryBudgetMb();
  // Each worker computes on its own thread too; by default the helpers take
  // the CPUs the workers leave (none when workers >= CPUs, so that a full
  // server does not run two threads per CPU).
  const int helpers = o.compute_threads >= 0
                          ? o.compute_threads
                          : std::max(0, AvailableCpus() - o.workers);
  if (o.max_receive_memory_mb == 0) {
    o.max_receive_memory_mb = std::max<int64_t>(256, o.max_message_mb * 4);
  }
  auto credentials = MakeCredentials(o);
  if (!credentials.ok()) return credentials.status();
  std::vector<std::string> tokens;
  if (!o.auth_token_file.empty()) {
    auto read = ReadTokenFile(o.auth_token_file);
    if (!read.ok()) return read.status();
    tokens = *std::move(read);
  }
  const bool no_token = tokens.empty();

  metric_families_ = std::make_unique<Metrics>(o.version, o.git_sha);
  if (o.metrics_port >= 0) {
    auto endpoint = MetricsEndpoint::Start(
        absl::StrCat(o.listen_address, ":", o.metrics_port),
        metric_families_->collectables());
    if (!endpoint.ok()) return endpoint.status();
    metrics_ = *std::move(endpoint);
  }
  auto tpcs = TpcCatalog::Create(o.tpc_dir, o.max_tpc_json_kb << 10);
  if (!tpcs.ok()) return tpcs.status();
  tpcs_ = *std::move(tpcs);
  Metrics* metrics = metric_families_.get();
  admission_ = std::make_unique<AdmissionController>(
      AdmissionLimits{o.workers, o.max_queued_jobs, o.max_job_memory_mb << 20},
      [metrics](const AdmissionController::Snapshot& s) {
        metrics->SetQueueDepth(s.queued);
        metrics->SetWorkersBusy(s.running);
        metrics->SetMemoryReserved(s.memory_bytes);
      });
  const AdmissionLimits& limits = admission_->limits();
  metrics->SetCapacity(limits.workers, limits.max_queued_jobs,
                       limits.max_memory_bytes);
  uploads_ = std::make_unique<UploadStore>(
      UploadStoreOptions{.max_bytes = o.upload_store_mb << 20,
                         .ttl = absl::Seconds(o.upload_ttl_seconds)});
  AddUploadStoreGauges(uploads_.get(), metrics);
  heartbeats_ =
      std::make_unique<HeartbeatTicker>(absl::Seconds(o.heartbeat_seconds));
  progress_flusher_ = std::make_unique<HeartbeatTicker>(kProgressInterval);
  compute_pool_ = std::make_unique<ThreadPool>(helpers);
  job_pool_ = std::make_unique<ThreadPool>(o.workers);

  auto faults = FaultInjection::Parse(o.fault_injection);
  if (!faults.ok()) return faults.status();
  if (!faults->empty()) {
    Log(LogLevel::kWarning, "fault injection armed: jobs will misbehave",
        {{"fault_injection", faults->ToString()}});
  }

  context_ = std::make_unique<ServiceContext>();
  context_->options = o;
  context_->faults = *std::move(faults);
  context_->auth_tokens = std::move(tokens);
  if (!o.tls_client_ca.empty()) {
    auto own = ReadPem("--tls_cert", o.tls_cert);
    if (!own.ok()) return own.status();
    context_->own_cert_pem = *std::move(own);
  }
  context_->tpcs = tpcs_.get();
  context_->admission = admission_.get();
  context_->uploads = uploads_.get();
  context_->metrics = metrics;
  context_->job_pool = job_pool_.get();
  context_->compute_pool = compute_pool_.get();
  context_->heartbeats = heartbeats_.get();
  context_->progress_flusher = progress_flusher_.get();
  service_ = std::make_unique<QuantizationServiceImpl>(context_.get());
  pruning_service_ = std::make_unique<PruningServiceImpl>(context_.get());
  data_generation_service_ =
      std::make_unique<DataGenerationServiceImpl>(context_.get());

  grpc::EnableDefaultHealthCheckService(true);
  if (o.enable_reflection) {
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  }
  grpc::ServerBuilder builder;
  const std::string address = ListenAddress(o);
  builder.AddListeningPort(address, *credentials, &port_);
  // Without this a second server on the same port would silently share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  builder.RegisterService(pruning_service_.get());
  builder.RegisterService(data_generation_service_.get());
  if (!o.enable_reflection) {
    builder.SetOption(std::make_unique<WithoutReflection>());
  }
  SetTransportLimits(o, &builder);

  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("--port: cannot listen on ", address));
  }
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  health->SetServingStatus("", true);            // liveness: the process is up
  health->SetServingStatus(kServiceName, true);  // readiness: takes jobs

  LogListening(o, port_, metrics_port(), compute_pool_->num_threads(),
               no_token);
  return absl::OkStatus();
}

void QuantdServer::BeginDrain() {
  if (context_->draining.exchange(true)) return;
  admission_->StopAdmitting();
  server_->GetHealthCheckService()->SetServingStatus(kServiceName, false);
  const AdmissionController::Snapshot now = admission_->snapshot();
  Log(LogLevel::kInfo, "draining",
      {{"running", absl::StrCat(now.running)},
       {"queued", absl::StrCat(now.queued)}});
}

void QuantdServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  BeginDrain();
  // In-flight calls get `grace`; then gRPC cancels them, OnCancel fires the
  // jobs' tokens, and Shutdown returns once every stream has finished.
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  job_pool_.reset();  // joins; queued jobs that were abandoned just return
  Log(LogLevel::kInfo, "stopped");
}

QuantdServer::~QuantdServer() {
  if (server_ != nullptr) Shutdown(absl::ZeroDuration());
  // Scrapes read the upload store: stop them before the members go.
  metrics_.reset();
}

}  // namespace quantd::server
