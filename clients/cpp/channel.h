// Channel factory for quantd clients.
//
// Targets like "dns:///quantd-headless.ns.svc:50051" resolve to every replica
// and the service config picks round_robin, so jobs spread over replicas
// (a plain "host:port" works too). Keepalive is set below the server's
// --min_recv_ping_interval_ms default, and message limits match the
// server's --max_message_mb default.
#ifndef QUANTD_CLIENTS_CPP_CHANNEL_H_
#define QUANTD_CLIENTS_CPP_CHANNEL_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace quantd::client {

struct ChannelOptions {
  std::string target;  // "host:port" or "dns:///name:port"
  // TLS: root CA to verify the server (PEM file; empty = system roots) and,
  // for mutual TLS, the client certificate and key (PEM files).
  bool use_tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Overrides the name checked against the server certificate.
  std::string tls_server_name;
  // Bearer token that Client sends as `authorization: Bearer <token>` on
  // every call (per call, since gRPC drops call credentials on plaintext).
  std::string auth_token;
  int64_t max_message_bytes = int64_t{64} << 20;
  int64_t keepalive_time_ms = 30000;
  int64_t keepalive_timeout_ms = 10000;
  // Retries before a stream has delivered anything (UNAVAILABLE only).
  bool enable_retries = true;
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const ChannelOptions& options);

// Sets a call's `authorization: Bearer` header (when `auth_token` is set)
// and its deadline (none for absl::InfiniteFuture()).
void PrepareCallContext(const std::string& auth_token, absl::Time deadline,
                        grpc::ClientContext* ctx);

// The service config CreateChannel installs; exposed for tests and docs.
std::string DefaultServiceConfigJson();

}  // namespace quantd::client

#endif  // QUANTD_CLIENTS_CPP_CHANNEL_H_
