// The connection flags every verb that talks to a server shares:
// --tls, --tls-ca FILE, --tls-cert FILE, --tls-key FILE, --tls-server-name
// NAME and --token-file FILE (old snake_case spellings accepted).
#ifndef QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_
#define QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/cpp/channel.h"
#include "clients/quantctl/flags.h"

namespace quantd::quantctl {

// Adds the flags to `flags`, writing into `options` (`--tls-ca` etc. imply
// --tls; `--token-file` reads the token, trimmed, and fails when the file
// is unreadable or empty).
void AddChannelFlags(FlagSet* flags, client::ChannelOptions* options);

// The flags of a verb that runs a job in-process or on a server: --server
// HOST:PORT (`server_help` says what runs there), the connection flags above
// and --deadline DURATION (in-process or on the server).
void AddServerFlags(FlagSet* flags, const std::string& server_help,
                    client::ChannelOptions* options, absl::Duration* deadline);

// Prints "quantctl VERB: CODE: message" to stderr; returns 1, the exit code
// of a failed job.
int PrintJobFailure(const std::string& verb, const absl::Status& status);

// True when any of those flags set something (for "needs --server").
bool AnyChannelFlag(const client::ChannelOptions& options);

}  // namespace quantd::quantctl

#endif  // QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_
