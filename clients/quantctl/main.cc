// quantctl: the quantd command-line client. Without --server it runs jobs
// in-process through the same core pipeline the server uses.
//
//   quantctl [-h|--help|help [VERB]] [--version]
//   quantctl VERB [flags]          (quantctl VERB --help lists them)
//   quantctl help --markdown       (the reference part of docs/cli.md)
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/quantctl/command.h"

namespace quantd::quantctl {
namespace {

std::string Overview() {
  std::string out =
      "usage: quantctl VERB [flags]   (quantctl VERB --help for its flags)\n"
      "       quantctl help [VERB]\n"
      "       quantctl --version\n\n"
      "quantd's command-line client: quantizes ONNX models in-process or on "
      "a quantd server.\n\nverbs:\n";
  for (const Command& c : Commands()) {
    std::string name = absl::StrCat("  ", c.name);
    name.resize(std::max<size_t>(name.size() + 2, 12), ' ');
    absl::StrAppend(&out, name, c.summary, "\n");
  }
  return out;
}

std::string Markdown() {
  std::string out = "## Verbs\n\n| Verb | Does |\n|---|---|\n";
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "| `", c.name, "` | ", c.summary, " |\n");
  }
  for (const Command& c : Commands()) {
    for (const FlagSet& f : c.flag_sets()) {
      absl::StrAppend(&out, "\n", f.Markdown());
    }
  }
  return out;
}

const Command* Find(const std::string& name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// quantctl help [VERB | --markdown]
int Help(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::printf("%s", Overview().c_str());
    return 0;
  }
  if (args[0] == "--markdown") {
    std::printf("%s", Markdown().c_str());
    return 0;
  }
  const Command* c = Find(args[0]);
  if (c == nullptr) {
    std::fprintf(stderr, "quantctl help: unknown verb '%s'\n%s",
                 args[0].c_str(), Overview().c_str());
    return 2;
  }
  return c->run({"--help"});
}

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "%s", Overview().c_str());
    return 2;
  }
  const std::string& verb = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (verb == "-h" || verb == "--help" || verb == "help") return Help(rest);
  if (verb == "--version" || verb == "-V") {
    std::printf("%s\n", VersionLine().c_str());
    return 0;
  }
  const Command* c = Find(verb);
  if (c == nullptr) {
    std::fprintf(stderr, "quantctl: unknown verb '%s'\n%s", verb.c_str(),
                 Overview().c_str());
    return 2;
  }
  return c->run(rest);
}

}  // namespace
}  // namespace quantd::quantctl

int main(int argc, char** argv) {
  return quantd::quantctl::Main(
      std::vector<std::string>(argv + 1, argv + argc));
}
