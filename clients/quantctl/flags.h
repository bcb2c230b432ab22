// Declarative command-line flags for one quantctl verb: each flag is a row
// (name, value name, one help line, setter), and the same table parses the
// arguments, prints `-h/--help` and generates docs/cli.md.
//
//   FlagSet flags("infer", "MODEL.onnx --inputs DIR --out DIR",
//                 "Runs float inference over a sample set.");
//   flags.Positional("MODEL.onnx", "the ONNX model", &args.model);
//   flags.String("inputs", "DIR", "sample-set folder", &args.inputs,
//                {.required = true});
//   flags.Int("threads", "threads in all", 1, 1024, &args.threads);
//   if (int rc = flags.ParseOrExit(argv); rc >= 0) return rc;
//
// Accepted: `--name VALUE`, `--name=VALUE`, `--switch`, `--switch=false`,
// `--` (the rest is positional). Names are kebab-case; `aliases` are hidden
// old spellings (`token_file`) kept so existing scripts keep working. Usage
// errors: a flag given twice, and an empty or blank value.
#ifndef QUANTD_CLIENTS_QUANTCTL_FLAGS_H_
#define QUANTD_CLIENTS_QUANTCTL_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace quantd::quantctl {

struct FlagOptions {
  bool required = false;
  std::vector<std::string> aliases;  // hidden: accepted, not listed
  std::string default_text;          // shown as "(default: ...)"
  // An empty value means something (gRPC health's "" service); for every
  // other flag an empty or blank value is a usage error.
  bool allow_empty = false;
};

struct Flag {
  std::string name;        // without "--"
  std::string value_name;  // "FILE", "N"; empty for a switch
  std::string help;        // one line
  // Gets the value text ("true" for a bare switch); errors name no flag (the
  // parser prefixes "--name: ").
  std::function<absl::Status(const std::string&)> set;
  FlagOptions options;
};

struct PositionalArg {
  std::string name;  // "MODEL.onnx"
  std::string help;
  std::function<absl::Status(const std::string&)> set;
  bool required = true;
};

class FlagSet {
 public:
  // `command` as typed after "quantctl" ("quantize", "tpc show"); `synopsis`
  // follows it on the usage line; `description` is one or two sentences.
  FlagSet(std::string command, std::string synopsis, std::string description);

  void Add(Flag flag);
  void Positional(std::string name, std::string help, std::string* dst,
                  bool required = true);
  void String(std::string name, std::string value_name, std::string help,
              std::string* dst, FlagOptions options = {});
  // An integer in [lo, hi].
  void Int(std::string name, std::string help, int lo, int hi, int* dst,
           FlagOptions options = {});
  // A switch: `--name` or `--name=true|false`.
  void Bool(std::string name, std::string help, bool* dst,
            FlagOptions options = {});
  // "90s", "30m", "1h30m" (absl::ParseDuration) or plain seconds, > 0.
  void Duration(std::string name, std::string help, absl::Duration* dst,
                FlagOptions options = {});

  // Parses `args` (what follows the verb). Errors name the flag or argument
  // at fault. Sets *help when -h/--help was given (nothing else is checked).
  absl::Status Parse(const std::vector<std::string>& args, bool* help) const;
  // Parse + the conventions of every verb: -h/--help prints Help() to
  // stdout and returns 0; an error prints "quantctl VERB: message" and the
  // usage line to stderr and returns 2; success returns -1.
  int ParseOrExit(const std::vector<std::string>& args) const;

  std::string Usage() const;     // "usage: quantctl VERB SYNOPSIS"
  std::string Help() const;      // usage, description, one line per flag
  std::string Markdown() const;  // a docs/cli.md section

  const std::string& command() const { return command_; }
  const std::string& description() const { return description_; }
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  const Flag* Find(const std::string& name) const;

  std::string command_, synopsis_, description_;
  std::vector<Flag> flags_;
  std::vector<PositionalArg> positionals_;
};

// Prints a warning line to stderr ("quantctl: warning: ...").
void PrintWarning(const std::string& message);

}  // namespace quantd::quantctl

#endif  // QUANTD_CLIENTS_QUANTCTL_FLAGS_H_
