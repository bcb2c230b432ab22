// quantctl health --server HOST:PORT [--service NAME] [TLS/token flags]
// Prints the grpc.health.v1 status; exits 0 only when SERVING (usable as a
// Kubernetes exec probe where native gRPC probes cannot do TLS).
#include <cstdio>
#include <string>
#include <vector>

#include "clients/cpp/client.h"
#include "clients/quantctl/channel_flags.h"
#include "clients/quantctl/command.h"

namespace quantd::quantctl {
namespace {

struct Args {
  client::ChannelOptions channel;
  std::string service;
  absl::Duration timeout = absl::Seconds(5);
};

FlagSet Flags(Args* a) {
  FlagSet f("health", "--server HOST:PORT",
            "Prints the server's grpc.health.v1 status; exits 0 only when "
            "SERVING, 1 otherwise (a Kubernetes exec probe that can do TLS).");
  f.String("server", "HOST:PORT", "the quantd server", &a->channel.target,
           {.required = true});
  f.String("service", "NAME",
           "service to ask about: quantd.v1.QuantizationService = readiness "
           "(default, or '': the whole server, liveness)",
           &a->service, {.allow_empty = true});
  f.Duration("timeout", "give up after DURATION", &a->timeout,
             {.aliases = {"timeout_s", "timeout-s"}, .default_text = "5s"});
  AddChannelFlags(&f, &a->channel);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static Args unused;
  return {Flags(&unused)};
}

int RunHealth(const std::vector<std::string>& argv) {
  Args args;
  if (int rc = Flags(&args).ParseOrExit(argv); rc >= 0) return rc;
  auto client = client::Client::Create(args.channel);
  if (!client.ok()) {
    std::fprintf(stderr, "quantctl health: %s\n",
                 std::string(client.status().message()).c_str());
    return 2;
  }
  (*client)->unary_timeout = args.timeout;
  auto status = (*client)->Health(args.service);
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

QUANTCTL_COMMAND(health, "print a server's health status (a probe)", RunHealth,
                 FlagSets);

}  // namespace quantd::quantctl
