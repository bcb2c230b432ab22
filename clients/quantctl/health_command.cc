// quantctl health --server HOST:PORT [--service NAME] [TLS/token flags]
// Prints the grpc.health.v1 status; exits 0 only when SERVING (usable as a
// Kubernetes exec probe where native gRPC probes cannot do TLS).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "clients/cpp/client.h"
#include "clients/quantctl/command.h"

namespace quantd::quantctl {
namespace {

constexpr char kUsage[] =
    "health --server HOST:PORT [--service NAME] [--tls] [--tls_ca FILE] "
    "[--tls_cert FILE --tls_key FILE] [--token_file FILE] [--timeout_s N]";

int RunHealth(const std::vector<std::string>& args) {
  client::ChannelOptions options;
  std::string service;
  int timeout_s = 5;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&](std::string* out) {
      return TakeFlagValue(args, &i, out);
    };
    std::string text;
    bool ok = true;
    if (a == "--server") {
      ok = value(&options.target);
    } else if (a == "--service") {
      ok = value(&service);
    } else if (a == "--tls") {
      options.use_tls = true;
    } else if (a == "--tls_ca") {
      ok = value(&options.tls_ca);
    } else if (a == "--tls_cert") {
      ok = value(&options.tls_cert);
    } else if (a == "--tls_key") {
      ok = value(&options.tls_key);
    } else if (a == "--token_file") {
      ok = value(&text);
      if (ok) {
        std::ifstream in(text);
        std::stringstream buffer;
        buffer << in.rdbuf();
        options.auth_token =
            std::string(absl::StripAsciiWhitespace(buffer.str()));
      }
    } else if (a == "--timeout_s") {
      ok = value(&text);
      if (ok) timeout_s = std::atoi(text.c_str());
    } else {
      std::fprintf(
          stderr,
          "quantctl health: unknown argument '%s'\nusage: quantctl %s\n",
          a.c_str(), kUsage);
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "quantctl health: %s needs a value\n", a.c_str());
      return 2;
    }
  }
  if (options.target.empty()) {
    std::fprintf(stderr,
                 "quantctl health: --server is required\nusage: quantctl %s\n",
                 kUsage);
    return 2;
  }
  auto client = client::Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "quantctl health: %s\n",
                 std::string(client.status().message()).c_str());
    return 2;
  }
  (*client)->unary_timeout = absl::Seconds(timeout_s);
  auto status = (*client)->Health(service);
  if (!status.ok()) {
    std::printf("UNKNOWN (%s: %s)\n",
                absl::StatusCodeToString(status.status().code()).c_str(),
                std::string(status.status().message()).c_str());
    return 1;
  }
  std::printf("%s\n", status->c_str());
  return *status == "SERVING" ? 0 : 1;
}

}  // namespace

QUANTCTL_COMMAND(health, kUsage, RunHealth);

}  // namespace quantd::quantctl
