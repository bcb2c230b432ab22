// What the RPC handlers share: options, admission, pools, stores, metrics.
// Owned by QuantdServer; handlers hold a pointer.
#ifndef QUANTD_SERVER_SERVICE_CONTEXT_H_
#define QUANTD_SERVER_SERVICE_CONTEXT_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/runtime/thread_pool.h"
#include "server/admission.h"
#include "server/fault_injection.h"
#include "server/heartbeat.h"
#include "server/metrics.h"
#include "server/server_options.h"
#include "server/tpc_catalog.h"
#include "server/upload_store.h"

namespace quantd::server {

// A job's stream carries at most one progress event per interval (each is
// a protobuf, a write and a client wake-up, which a 10 ms job paid eight
// times: docs/service.md, service overhead).
inline constexpr absl::Duration kProgressInterval = absl::Milliseconds(50);

struct ServiceContext {
  ServerOptions options;
  // --auth_token_file's tokens; empty: no authentication.
  std::vector<std::string> auth_tokens;
  // With mutual TLS: the server's certificate (PEM), which no client may
  // present.
  std::string own_cert_pem;
  TpcCatalog* tpcs = nullptr;
  AdmissionController* admission = nullptr;
  UploadStore* uploads = nullptr;
  Metrics* metrics = nullptr;
  ThreadPool* job_pool = nullptr;      // one thread per worker
  ThreadPool* compute_pool = nullptr;  // data-parallel work inside jobs
  HeartbeatTicker* heartbeats = nullptr;
  // Ticks every kProgressInterval: sends progress a job held back.
  HeartbeatTicker* progress_flusher = nullptr;
  FaultInjection faults;  // --fault_injection (tests only)
  std::atomic<bool> draining{false};

  int64_t max_message_bytes() const { return options.max_message_mb << 20; }

  // OK if the call may proceed: authenticated (when a token is configured)
  // and, with mutual TLS, not presenting the server's own certificate.
  absl::Status Authorize(const grpc::CallbackServerContext& ctx) const {
    return Authenticate(ctx).status();
  }
  // Same, returning who the client is: "token:<index in the token file>"
  // and/or "cert:<sha256 of its certificate>", "" without authentication.
  // Uploads are kept apart per identity.
  absl::StatusOr<std::string> Authenticate(
      const grpc::CallbackServerContext& ctx) const;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_SERVICE_CONTEXT_H_
