// Everything the quantd server can be configured with. main.cc fills it from
// flags (and QUANTD_* environment variables); tests fill it directly.
#ifndef QUANTD_SERVER_SERVER_OPTIONS_H_
#define QUANTD_SERVER_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

namespace quantd::server {

struct ServerOptions {
  // Where gRPC listens; port 0 picks a free port (QuantdServer::port()).
  std::string listen_address = "127.0.0.1";
  int port = 50051;
  // Prometheus /metrics on listen_address; 0 picks a port, < 0 disables.
  int metrics_port = 9464;

  int workers = 1;  // jobs that run at once
  // Helper threads for data-parallel work inside jobs, shared by the
  // workers (each worker computes on its own thread too); -1 = the CPUs the
  // workers leave: max(0, AvailableCpus() - workers).
  int compute_threads = -1;
  int max_queued_jobs = 16;  // jobs that may wait for a worker
  // Admission budget for the summed job estimates; 0 = unlimited, < 0 = 3/4
  // of the machine's or cgroup's memory (server/memory_budget.h), resolved
  // when the server starts.
  int64_t max_job_memory_mb = -1;
  std::string tpc_dir;  // extra TPC files (.json / .textproto)

  int64_t max_message_mb = 64;     // gRPC receive and send limit
  int64_t max_upload_mb = 2048;    // one UploadModel content
  int64_t upload_store_mb = 4096;  // all uploads together (LRU)
  int upload_ttl_seconds = 3600;
  // Memory of gRPC's buffers for requests being received (a
  // grpc::ResourceQuota; under pressure gRPC shrinks flow-control windows
  // and cancels streams). 0 = the larger of 256 and max_message_mb * 4.
  int64_t max_receive_memory_mb = 0;
  // Inline TPC JSON (tpc.inline_json, ValidateTpc's mct_json): parsing costs
  // about 20 times the text, so longer ones are rejected unparsed.
  int64_t max_tpc_json_kb = 1024;

  // Limits on untrusted requests (the pipeline's JobLimits).
  int64_t max_model_mb = 2048;
  int64_t max_nodes = 100000;
  // Largest tensor of a model (initializer), in elements: 2^28 floats are
  // 1 GiB, above every activation and weight of the models in docs/models.md.
  int64_t max_tensor_elements = int64_t{1} << 28;
  int64_t max_samples = 10000;
  int64_t max_sample_mb = 4096;

  int heartbeat_seconds = 10;
  // SIGTERM: readiness NOT_SERVING for drain_delay_seconds (so load
  // balancers stop sending), then running jobs get drain_seconds to finish
  // before they are cancelled.
  int drain_delay_seconds = 0;
  int drain_seconds = 30;

  // TLS: server certificate and key (PEM files); with tls_client_ca, clients
  // must present a certificate signed by it (mutual TLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // File holding the bearer token clients must send in `authorization`.
  std::string auth_token_file;

  // Keepalive and connection age (service-reference §2.5). 0 = gRPC default.
  int64_t keepalive_time_ms = 60000;
  int64_t keepalive_timeout_ms = 20000;
  bool keepalive_permit_without_calls = true;
  int64_t min_recv_ping_interval_ms = 10000;
  int64_t max_connection_idle_ms = 0;
  int64_t max_connection_age_ms = 0;
  // Must exceed the longest job, or connection aging cuts running streams.
  int64_t max_connection_age_grace_ms = 0;
  // Reflection answers without the token (gRPC serves it), so it is opt-in.
  bool enable_reflection = false;
  // Test-only misbehaviour of job stages (server/fault_injection.h).
  std::string fault_injection;

  std::string version = "dev";
  std::string git_sha = "unknown";
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_SERVER_OPTIONS_H_
