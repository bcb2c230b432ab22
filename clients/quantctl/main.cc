// quantctl: the quantd command-line client. Without --server it runs jobs
// in-process through the same core pipeline the server uses.
#include <cstdio>
#include <string>
#include <vector>

#include "clients/quantctl/command.h"

namespace {

void PrintUsage() {
  std::fprintf(stderr, "usage: quantctl <command> [args]\n\ncommands:\n");
  for (const auto& c : quantd::quantctl::Commands()) {
    std::fprintf(stderr, "  %s\n", c.usage.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "help") {
    PrintUsage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const auto& c : quantd::quantctl::Commands()) {
    if (c.name == name) {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  std::fprintf(stderr, "quantctl: unknown command '%s'\n", name.c_str());
  PrintUsage();
  return 2;
}
