// quantctl version: the version and the commit (as `quantctl --version`).
#include <cstdio>

#include "clients/quantctl/command.h"

namespace quantd::quantctl {
namespace {

FlagSet Flags() {
  return FlagSet("version", "", "Prints the version and the commit.");
}

std::vector<FlagSet> FlagSets() { return {Flags()}; }

int RunVersion(const std::vector<std::string>& args) {
  if (int rc = Flags().ParseOrExit(args); rc >= 0) return rc;
  std::printf("%s\n", VersionLine().c_str());
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(version, "print the version and the commit", RunVersion,
                 FlagSets);

}  // namespace quantd::quantctl
