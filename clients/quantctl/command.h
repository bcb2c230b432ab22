// Subcommand registry for quantctl. Each `<name>_command.cc` registers one
// top-level command with its flag table(s) (flags.h):
//
//   QUANTCTL_COMMAND(infer, "float inference over a sample set", RunInfer,
//                    InferFlagSets);
//
// `int RunInfer(const std::vector<std::string>& args)` gets the arguments
// after the command name and returns the process exit code;
// `std::vector<FlagSet> InferFlagSets()` returns the verb's flag sets (one
// per sub-verb for `tpc`) bound to throwaway arguments, for `quantctl help`
// and docs/cli.md.
#ifndef QUANTD_CLIENTS_QUANTCTL_COMMAND_H_
#define QUANTD_CLIENTS_QUANTCTL_COMMAND_H_

#include <string>
#include <vector>

#include "clients/quantctl/flags.h"

namespace quantd::quantctl {

using CommandFn = int (*)(const std::vector<std::string>& args);
using FlagSetsFn = std::vector<FlagSet> (*)();

struct Command {
  std::string name;
  std::string summary;  // one line for `quantctl --help`
  CommandFn run;
  FlagSetsFn flag_sets;
};

// Returns true so it can initialise a namespace-scope constant.
bool RegisterCommand(Command command);
const std::vector<Command>& Commands();

// "quantctl X.Y.Z (commit SHA)".
std::string VersionLine();

}  // namespace quantd::quantctl

#define QUANTCTL_COMMAND(name, summary, fn, flag_sets) \
  static const bool quantctl_registered_##name =       \
      ::quantd::quantctl::RegisterCommand({#name, summary, fn, flag_sets})

#endif  // QUANTD_CLIENTS_QUANTCTL_COMMAND_H_
