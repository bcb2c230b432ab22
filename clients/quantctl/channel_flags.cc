#include "clients/quantctl/channel_flags.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace quantd::quantctl {
namespace {

// A PEM file flag that also turns TLS on.
void TlsFile(FlagSet* flags, const std::string& name, const std::string& help,
             bool implies_tls, client::ChannelOptions* options,
             std::string* dst) {
  std::string alias = name;
  for (char& c : alias) c = c == '-' ? '_' : c;
  flags->Add({name,
              "FILE",
              help,
              [options, dst, implies_tls](const std::string& v) {
                *dst = v;
                if (implies_tls) options->use_tls = true;
                return absl::OkStatus();
              },
              {.aliases = {alias}}});
}

}  // namespace

void AddChannelFlags(FlagSet* flags, client::ChannelOptions* options) {
  flags->Bool("tls", "connect with TLS (system roots unless --tls-ca)",
              &options->use_tls);
  TlsFile(flags, "tls-ca", "PEM root CA that signs the server's certificate",
          true, options, &options->tls_ca);
  TlsFile(flags, "tls-cert", "PEM client certificate (mutual TLS)", true,
          options, &options->tls_cert);
  TlsFile(flags, "tls-key", "PEM key of --tls-cert", true, options,
          &options->tls_key);
  flags->String("tls-server-name", "NAME",
                "name checked against the server's certificate",
                &options->tls_server_name, {.aliases = {"tls_server_name"}});
  flags->Add({"token-file",
              "FILE",
              "file holding the bearer token the server requires",
              [options](const std::string& path) {
                std::ifstream in(path);
                if (!in) {
                  return absl::InvalidArgumentError(
                      absl::StrCat("cannot read '", path, "'"));
                }
                std::stringstream buffer;
                buffer << in.rdbuf();
                options->auth_token =
                    std::string(absl::StripAsciiWhitespace(buffer.str()));
                if (options->auth_token.empty()) {
                  return absl::InvalidArgumentError(
                      absl::StrCat("'", path, "' is empty"));
                }
                return absl::OkStatus();
              },
              {.aliases = {"token_file"}}});
}

bool AnyChannelFlag(const client::ChannelOptions& options) {
  return options.use_tls || !options.tls_ca.empty() ||
         !options.tls_cert.empty() || !options.tls_key.empty() ||
         !options.tls_server_name.empty() || !options.auth_token.empty();
}

void AddServerFlags(FlagSet* flags, const std::string& server_help,
                    client::ChannelOptions* options, absl::Duration* deadline) {
  flags->String("server", "HOST:PORT", server_help, &options->target);
  AddChannelFlags(flags, options);
  flags->Duration(
      "deadline",
      "give up after DURATION (e.g. 30m; in-process or on the server)",
      deadline);
}

int PrintJobFailure(const std::string& verb, const absl::Status& status) {
  std::fprintf(stderr, "quantctl %s: %s: %s\n", verb.c_str(),
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace quantd::quantctl
