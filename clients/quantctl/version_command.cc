#include <cstdio>

#include "clients/quantctl/command.h"

namespace quantd::quantctl {
namespace {

int RunVersion(const std::vector<std::string>&) {
  std::printf("quantctl %s\n", QUANTD_VERSION);
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(version, "version", RunVersion);

}  // namespace quantd::quantctl
