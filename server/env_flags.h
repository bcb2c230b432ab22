// QUANTD_* environment equivalents for absl flags.
//
// Abseil's --fromenv reads FLAGS_<name>; containers want QUANTD_<NAME>.
// Precedence: command line > environment > default. Call after
// absl::ParseCommandLine with the same arguments.
#ifndef QUANTD_SERVER_ENV_FLAGS_H_
#define QUANTD_SERVER_ENV_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace quantd::server {

// Returns the value of an environment variable, or nullptr if unset.
using EnvLookup = std::function<const char*(const char* name)>;

// "max_job_memory_mb" -> "QUANTD_MAX_JOB_MEMORY_MB".
std::string EnvNameForFlag(absl::string_view flag_name);

// Names of the flags that `args` (argv without argv[0]) sets, in any of the
// forms absl accepts: --name=v, --name v, -name, --noname. Stops at "--".
std::vector<std::string> FlagsOnCommandLine(
    const std::vector<std::string>& args);

// For every registered absl flag not set on the command line, parses
// QUANTD_<NAME> from `env` if present. Fails naming the variable when a value
// does not parse.
absl::Status ApplyEnvironmentToFlags(const std::vector<std::string>& args,
                                     const EnvLookup& env);

}  // namespace quantd::server

#endif  // QUANTD_SERVER_ENV_FLAGS_H_
