#include "clients/quantctl/command.h"

#include <algorithm>

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

}  // namespace quantd::quantctl
