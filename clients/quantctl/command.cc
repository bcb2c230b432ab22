#include "clients/quantctl/command.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#ifndef QUANTD_VERSION
#define QUANTD_VERSION "dev"
#endif
#ifndef QUANTD_GIT_SHA
#define QUANTD_GIT_SHA "unknown"
#endif

namespace quantd::quantctl {
namespace {

std::vector<Command>& Registry() {
  static auto* commands = new std::vector<Command>();
  return *commands;
}

}  // namespace

bool RegisterCommand(Command command) {
  auto& registry = Registry();
  registry.push_back(std::move(command));
  std::sort(registry.begin(), registry.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  return true;
}

const std::vector<Command>& Commands() { return Registry(); }

std::string VersionLine() {
  return absl::StrCat("quantctl ", QUANTD_VERSION, " (commit ", QUANTD_GIT_SHA,
                      ")");
}

}  // namespace quantd::quantctl
