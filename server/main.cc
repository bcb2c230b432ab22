// quantd: the quantization server. Flags (each also read from QUANTD_<NAME>)
// are documented in docs/service.md. SIGTERM or SIGINT drains: readiness
// goes NOT_SERVING, new jobs are refused, running jobs get --drain_seconds to
// finish and are cancelled after that; the process then exits 0.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/env_flags.h"
#include "server/grpc_server.h"
#include "server/json_log.h"

ABSL_FLAG(std::string, listen_address, "127.0.0.1",
          "Address to listen on; 0.0.0.0 or [::] for all interfaces.");
ABSL_FLAG(int, port, 50051, "gRPC port; 0 picks a free one (logged).");
ABSL_FLAG(int, metrics_port, 9464,
          "Prometheus /metrics port on --listen_address; 0 picks one, -1 "
          "disables.");
ABSL_FLAG(int, workers, 1, "Jobs that run at once.");
ABSL_FLAG(int, compute_threads, -1,
          "Helper threads for data-parallel work inside jobs, shared by the "
          "workers (each also computes on its own thread); -1 = the CPUs the "
          "workers leave (CPU quota and affinity aware), none when --workers "
          ">= CPUs.");
ABSL_FLAG(int, max_queued_jobs, 16,
          "Jobs that may wait for a worker; more get RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_job_memory_mb, -1,
          "Memory budget of all admitted jobs (estimated), MiB; 0 = "
          "unlimited, -1 = 3/4 of the machine's or cgroup's memory.");
ABSL_FLAG(std::string, tpc_dir, "",
          "Directory of extra TPC files (.json MCT format or .textproto).");
ABSL_FLAG(int64_t, max_message_mb, 64,
          "Largest gRPC message received or sent, MiB (< 2048).");
ABSL_FLAG(int64_t, max_upload_mb, 2048, "Largest UploadModel content, MiB.");
ABSL_FLAG(int64_t, upload_store_mb, 4096,
          "Bytes all uploads may occupy (least recently used go first), MiB.");
ABSL_FLAG(int64_t, max_receive_memory_mb, 0,
          "Memory for gRPC's receive buffers of all calls, MiB (a gRPC "
          "resource quota); 0 = the larger of 256 and 4 x --max_message_mb.");
ABSL_FLAG(int64_t, max_tpc_json_kb, 1024,
          "Largest inline TPC JSON (tpc.inline_json, mct_json), KiB; it is "
          "rejected before parsing, which costs ~20x its size.");
ABSL_FLAG(int, upload_ttl_seconds, 3600,
          "Uploads unused for this long expire.");
ABSL_FLAG(int64_t, max_model_mb, 2048, "Largest ONNX model, MiB.");
ABSL_FLAG(int64_t, max_nodes, 100000, "Most nodes in a model.");
ABSL_FLAG(int64_t, max_tensor_elements, int64_t{1} << 28,
          "Most elements of one tensor of a model.");
ABSL_FLAG(int64_t, max_samples, 10000, "Most calibration samples per job.");
ABSL_FLAG(int64_t, max_sample_mb, 4096, "All samples of a job together, MiB.");
ABSL_FLAG(int, heartbeat_seconds, 10,
          "Seconds between heartbeat events on Quantize streams.");
ABSL_FLAG(int, drain_delay_seconds, 0,
          "On SIGTERM: seconds with readiness NOT_SERVING before the "
          "listener stops (lets load balancers notice). A second signal "
          "skips the rest of the delay.");
ABSL_FLAG(int, drain_seconds, 30,
          "On SIGTERM: seconds running jobs get to finish before they are "
          "cancelled.");
ABSL_FLAG(std::string, tls_cert, "", "Server certificate chain (PEM file).");
ABSL_FLAG(std::string, tls_key, "", "Server private key (PEM file).");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA bundle (PEM) that client certificates must chain to; enables "
          "mutual TLS.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File with the bearer token clients must send "
          "(authorization: Bearer <token>).");
ABSL_FLAG(int64_t, keepalive_time_ms, 60000,
          "Server keepalive ping interval (GRPC_ARG_KEEPALIVE_TIME_MS).");
ABSL_FLAG(int64_t, keepalive_timeout_ms, 20000,
          "Keepalive ping ack timeout (GRPC_ARG_KEEPALIVE_TIMEOUT_MS).");
ABSL_FLAG(bool, keepalive_permit_without_calls, true,
          "Allow client pings without active calls.");
ABSL_FLAG(int64_t, min_recv_ping_interval_ms, 10000,
          "Minimum client ping interval accepted "
          "(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS); clients "
          "must not ping more often.");
ABSL_FLAG(int64_t, max_connection_idle_ms, 0,
          "Close connections idle this long; 0 = never.");
ABSL_FLAG(int64_t, max_connection_age_ms, 0,
          "Close connections after this age so clients re-resolve and "
          "rebalance; 0 = never.");
ABSL_FLAG(int64_t, max_connection_age_grace_ms, 0,
          "Grace for calls on an aged connection; set above the longest job.");
ABSL_FLAG(bool, enable_reflection, false,
          "Serve gRPC server reflection (grpcurl). It answers without the "
          "token, so it is off unless asked for.");
ABSL_FLAG(std::string, fault_injection, "",
          "For tests only: stall:STAGE, stall:STAGE@N (at the stage's N-th "
          "progress report), fail:STAGE or throw:STAGE, comma-separated "
          "(server/fault_injection.h).");

#ifndef QUANTD_VERSION
#define QUANTD_VERSION "dev"
#endif
#ifndef QUANTD_GIT_SHA
#define QUANTD_GIT_SHA "unknown"
#endif

namespace quantd::server {
namespace {

ServerOptions OptionsFromFlags() {
  ServerOptions o;
  o.listen_address = absl::GetFlag(FLAGS_listen_address);
  o.port = absl::GetFlag(FLAGS_port);
  o.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o.workers = absl::GetFlag(FLAGS_workers);
  o.compute_threads = absl::GetFlag(FLAGS_compute_threads);
  o.max_queued_jobs = absl::GetFlag(FLAGS_max_queued_jobs);
  o.max_job_memory_mb = absl::GetFlag(FLAGS_max_job_memory_mb);
  o.tpc_dir = absl::GetFlag(FLAGS_tpc_dir);
  o.max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  o.max_upload_mb = absl::GetFlag(FLAGS_max_upload_mb);
  o.upload_store_mb = absl::GetFlag(FLAGS_upload_store_mb);
  o.upload_ttl_seconds = absl::GetFlag(FLAGS_upload_ttl_seconds);
  o.max_receive_memory_mb = absl::GetFlag(FLAGS_max_receive_memory_mb);
  o.max_tpc_json_kb = absl::GetFlag(FLAGS_max_tpc_json_kb);
  o.max_model_mb = absl::GetFlag(FLAGS_max_model_mb);
  o.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  o.max_tensor_elements = absl::GetFlag(FLAGS_max_tensor_elements);
  o.max_samples = absl::GetFlag(FLAGS_max_samples);
  o.max_sample_mb = absl::GetFlag(FLAGS_max_sample_mb);
  o.heartbeat_seconds = absl::GetFlag(FLAGS_heartbeat_seconds);
  o.drain_delay_seconds = absl::GetFlag(FLAGS_drain_delay_seconds);
  o.drain_seconds = absl::GetFlag(FLAGS_drain_seconds);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  o.keepalive_time_ms = absl::GetFlag(FLAGS_keepalive_time_ms);
  o.keepalive_timeout_ms = absl::GetFlag(FLAGS_keepalive_timeout_ms);
  o.keepalive_permit_without_calls =
      absl::GetFlag(FLAGS_keepalive_permit_without_calls);
  o.min_recv_ping_interval_ms = absl::GetFlag(FLAGS_min_recv_ping_interval_ms);
  o.max_connection_idle_ms = absl::GetFlag(FLAGS_max_connection_idle_ms);
  o.max_connection_age_ms = absl::GetFlag(FLAGS_max_connection_age_ms);
  o.max_connection_age_grace_ms =
      absl::GetFlag(FLAGS_max_connection_age_grace_ms);
  o.enable_reflection = absl::GetFlag(FLAGS_enable_reflection);
  o.fault_injection = absl::GetFlag(FLAGS_fault_injection);
  o.version = QUANTD_VERSION;
  o.git_sha = QUANTD_GIT_SHA;
  return o;
}

// --help lists quantd's own flags (not Abseil's or gRPC's, which --helpfull
// adds); --version prints the version and the commit.
void ConfigureUsage() {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  // The flag's file as the repository names it, not the build machine's
  // path ("server/main.cc").
  usage.normalize_filename = [](absl::string_view file) {
    const size_t at = file.rfind("server/");
    return std::string(at == absl::string_view::npos ? file : file.substr(at));
  };
  usage.version_string = [] {
    return absl::StrCat("quantd ", QUANTD_VERSION, " (commit ", QUANTD_GIT_SHA,
                        ")\n");
  };
  absl::SetFlagsUsageConfig(usage);
}

int Run(int argc, char** argv) {
  ConfigureUsage();
  absl::SetProgramUsageMessage(
      "quantd [--port=50051] [--workers=N] [--tls_cert=...] ... "
      "(docs/service.md; every flag also reads QUANTD_<NAME>)");
  // Signals go to the sigwait thread only: block them before any thread
  // (gRPC's, the pools') starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Help is a success: Abseil's own handler exits 1 after printing it.
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (a == "--help" || a == "-help" || a == "-h" || a == "--helpshort" ||
        a == "--helpfull") {
      absl::flags_internal::FlagsHelp(
          std::cout, a == "--helpfull" ? "" : "server/main",
          absl::flags_internal::HelpFormat::kHumanReadable,
          absl::ProgramUsageMessage());
      return 0;
    }
    if (a == "--") break;
  }
  absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (absl::Status s = ApplyEnvironmentToFlags(
          args, [](const char* name) { return std::getenv(name); });
      !s.ok()) {
    Log(LogLevel::kError, s.message());
    return 2;
  }
  RouteGrpcLogsToJson();
  const ServerOptions options = OptionsFromFlags();
  auto server = QuantdServer::Start(options);
  if (!server.ok()) {
    Log(LogLevel::kError, "cannot start",
        {{"error", std::string(server.status().message())}});
    return 1;
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  Log(LogLevel::kInfo, "signal received; draining",
      {{"signal", absl::StrCat(signal_number)},
       {"drain_delay_seconds", absl::StrCat(options.drain_delay_seconds)},
       {"drain_seconds", absl::StrCat(options.drain_seconds)}});
  (*server)->BeginDrain();
  if (options.drain_delay_seconds > 0) {
    // Readiness is NOT_SERVING now; give load balancers time to notice. A
    // second signal ends the wait early.
    const timespec delay{options.drain_delay_seconds, 0};
    sigtimedwait(&signals, nullptr, &delay);
  }
  (*server)->Shutdown(absl::Seconds(options.drain_seconds));
  server->reset();
  return 0;
}

}  // namespace
}  // namespace quantd::server

int main(int argc, char** argv) { return quantd::server::Run(argc, argv); }
