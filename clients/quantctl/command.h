// Subcommand registry for quantctl. Each `<name>_command.cc` registers one
// top-level command:
//
//   QUANTCTL_COMMAND(tpc, "tpc list|show|validate|diff ...", RunTpcCommand);
//
// where `int RunTpcCommand(const std::vector<std::string>& args)` gets the
// arguments after the command name and returns the process exit code.
#ifndef QUANTD_CLIENTS_QUANTCTL_COMMAND_H_
#define QUANTD_CLIENTS_QUANTCTL_COMMAND_H_

#include <string>
#include <vector>

namespace quantd::quantctl {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  std::string name;
  std::string usage;
  CommandFn run;
};

// Prints "quantctl <command>: <message>" and the usage line to stderr and
// returns 2, the exit code for a usage error.
int UsageError(const std::string& command, const std::string& usage,
               const std::string& message);

// For "--flag VALUE" at args[*i]: stores the value, advances *i past it and
// returns true; false when the flag is the last argument.
bool TakeFlagValue(const std::vector<std::string>& args, size_t* i,
                   std::string* value);

// Returns true so it can initialise a namespace-scope constant.
bool RegisterCommand(Command command);
const std::vector<Command>& Commands();

}  // namespace quantd::quantctl

#define QUANTCTL_COMMAND(name, usage, fn)        \
  static const bool quantctl_registered_##name = \
      ::quantd::quantctl::RegisterCommand({#name, usage, fn})

#endif  // QUANTD_CLIENTS_QUANTCTL_COMMAND_H_
