// The connection flags every verb that talks to a server shares:
// --tls, --tls-ca FILE, --tls-cert FILE, --tls-key FILE, --tls-server-name
// NAME and --token-file FILE (old snake_case spellings accepted).
#ifndef QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_
#define QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_

#include "clients/cpp/channel.h"
#include "clients/quantctl/flags.h"

namespace quantd::quantctl {

// Adds the flags to `flags`, writing into `options` (`--tls-ca` etc. imply
// --tls; `--token-file` reads the token, trimmed, and fails when the file
// is unreadable or empty).
void AddChannelFlags(FlagSet* flags, client::ChannelOptions* options);

// True when any of those flags set something (for "needs --server").
bool AnyChannelFlag(const client::ChannelOptions& options);

}  // namespace quantd::quantctl

#endif  // QUANTD_CLIENTS_QUANTCTL_CHANNEL_FLAGS_H_
