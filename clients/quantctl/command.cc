#include "clients/quantctl/command.h"

#include <algorithm>
#include <cstdio>

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

int UsageError(const std::string& command, const std::string& usage,
               const std::string& message) {
  std::fprintf(stderr, "quantctl %s: %s\nusage: quantctl %s\n", command.c_str(),
               message.c_str(), usage.c_str());
  return 2;
}

bool TakeFlagValue(const std::vector<std::string>& args, size_t* i,
                   std::string* value) {
  if (*i + 1 >= args.size()) return false;
  *value = args[++*i];
  return true;
}

}  // namespace quantd::quantctl
