#include "clients/cpp/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace quantd::client {
namespace {

absl::StatusOr<std::string> ReadFile(const char* what,
                                     const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(what, ": cannot read ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::string DefaultServiceConfigJson() {
  return R"({
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{
    "name": [{"service": "quantd.v1.QuantizationService"}],
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.2s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})";
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const ChannelOptions& options) {
  if (options.target.empty()) {
    return absl::InvalidArgumentError("target: empty (expected host:port)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.use_tls || !options.tls_ca.empty() || !options.tls_cert.empty()) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      auto ca = ReadFile("tls_ca", options.tls_ca);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (options.tls_cert.empty() != options.tls_key.empty()) {
      return absl::InvalidArgumentError(
          "tls_cert and tls_key must be given together");
    }
    if (!options.tls_cert.empty()) {
      auto cert = ReadFile("tls_cert", options.tls_cert);
      if (!cert.ok()) return cert.status();
      auto key = ReadFile("tls_key", options.tls_key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              static_cast<int>(options.keepalive_time_ms));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              static_cast<int>(options.keepalive_timeout_ms));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetServiceConfigJSON(DefaultServiceConfigJson());
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, options.enable_retries ? 1 : 0);
  return grpc::CreateCustomChannel(options.target, credentials, args);
}

void PrepareCallContext(const std::string& auth_token, absl::Time deadline,
                        grpc::ClientContext* ctx) {
  if (!auth_token.empty()) {
    ctx->AddMetadata("authorization", absl::StrCat("Bearer ", auth_token));
  }
  if (deadline != absl::InfiniteFuture()) {
    ctx->set_deadline(absl::ToChronoTime(deadline));
  }
}

}  // namespace quantd::client
