// quantctl tpc list | show | validate | diff: the TPC library from the
// command line, in-process (no server needed).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/quantctl/command.h"
#include "core/tpc/json_io.h"
#include "core/tpc/registry.h"
#include "core/tpc/tpc_diff.h"
#include "core/tpc/tpc_summary.h"
#include "core/tpc/validation.h"

namespace quantd::quantctl {
namespace {

using quantd::v1::TargetPlatformCapabilities;

constexpr char kUsage[] =
    "usage:\n"
    "  quantctl tpc list [--tpc_dir DIR]\n"
    "  quantctl tpc show NAME[@VERSION]|FILE [--json] [--schema 1|2] "
    "[--tpc_dir DIR]\n"
    "  quantctl tpc validate FILE [--strict]\n"
    "  quantctl tpc diff A B [--tpc_dir DIR]   (A, B: NAME[@VERSION] or "
    "FILE)\n";

struct Args {
  std::vector<std::string> positional;
  std::string tpc_dir;
  bool json = false;
  bool strict = false;
  int schema = 2;
  std::string error;
};

Args ParseArgs(const std::vector<std::string>& args, size_t from) {
  Args a;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "--json") {
      a.json = true;
    } else if (s == "--strict") {
      a.strict = true;
    } else if (s == "--tpc_dir" || s == "--schema") {
      if (i + 1 >= args.size()) {
        a.error = s + " needs a value";
        return a;
      }
      const std::string& v = args[++i];
      if (s == "--tpc_dir") {
        a.tpc_dir = v;
      } else if (v == "1" || v == "2") {
        a.schema = v[0] - '0';
      } else {
        a.error = "--schema must be 1 or 2";
      }
    } else if (absl::StartsWith(s, "--tpc_dir=")) {
      a.tpc_dir = s.substr(10);
    } else if (absl::StartsWith(s, "--")) {
      a.error = "unknown flag " + s;
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

bool LooksLikeFile(const std::string& ref) {
  return absl::EndsWith(ref, ".json") || absl::EndsWith(ref, ".textproto") ||
         absl::EndsWith(ref, ".txtpb") || absl::EndsWith(ref, ".pbtxt") ||
         absl::StrContains(ref, "/");
}

absl::StatusOr<tpc::TpcRegistry*> Registry(const std::string& tpc_dir) {
  static tpc::TpcRegistry* registry = new tpc::TpcRegistry();
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    absl::Status s = registry->AddBuiltins();
    if (s.ok() && !tpc_dir.empty()) s = registry->LoadDirectory(tpc_dir);
    if (!s.ok()) return s;
  }
  return registry;
}

// A registry reference or a file; `label` gets what was loaded.
absl::StatusOr<TargetPlatformCapabilities> Load(const std::string& ref,
                                                const std::string& tpc_dir,
                                                std::string* label) {
  if (LooksLikeFile(ref) || std::filesystem::is_regular_file(ref)) {
    *label = ref;
    return tpc::LoadTpcFile(ref, {.upgrade_to_v2 = false});
  }
  auto registry = Registry(tpc_dir);
  if (!registry.ok()) return registry.status();
  auto entry = (*registry)->ResolveEntry(ref);
  if (!entry.ok()) return entry.status();
  *label = absl::StrCat(entry->name, "@", entry->version);
  return *entry->tpc;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "quantctl tpc: %s\n", std::string(s.message()).c_str());
  return 1;
}

int List(const Args& a) {
  auto registry = Registry(a.tpc_dir);
  if (!registry.ok()) return Fail(registry.status());
  std::printf("%-10s %-9s %-16s %-8s %7s %7s  %s\n", "NAME", "VERSION",
              "TPC NAME", "SCHEMA", "OPSETS", "FUSING", "SOURCE");
  for (const auto& e : (*registry)->List()) {
    std::printf("%-10s %-9s %-16s v%-7d %7d %7d  %s\n", e.name.c_str(),
                e.version.c_str(), e.tpc->name().c_str(),
                e.tpc->schema_version(), e.tpc->operator_set_size(),
                e.tpc->fusing_patterns_size(), e.source.c_str());
  }
  std::printf(
      "\n\"default\" resolves to imx500@1.0; NAME@MAJOR to the "
      "latest minor; NAME alone to the latest version.\n");
  return 0;
}

int Show(const Args& a) {
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  std::string label;
  auto tpc = Load(a.positional[0], a.tpc_dir, &label);
  if (!tpc.ok()) return Fail(tpc.status());
  if (a.json) {
    std::printf("%s\n",
                tpc::TpcToJson(*tpc, {.schema_version = a.schema}).c_str());
    return 0;
  }
  std::printf("%s\n%s", label.c_str(), tpc::TpcSummary(*tpc).c_str());
  return 0;
}

int Validate(const Args& a) {
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const std::string& path = a.positional[0];
  auto tpc = tpc::LoadTpcFile(path);
  if (!tpc.ok()) return Fail(tpc.status());
  const auto errors = tpc::TpcErrors(*tpc, {.strict = a.strict});
  for (const auto& w : tpc::TpcWarnings(*tpc)) {
    if (!a.strict || !absl::StrContains(w, "are both true")) {
      std::printf("warning: %s\n", w.c_str());
    }
  }
  if (!errors.empty()) {
    std::printf("%s: INVALID (%zu errors)\n", path.c_str(), errors.size());
    for (const auto& e : errors) std::printf("error: %s\n", e.c_str());
    return 1;
  }
  std::printf(
      "%s: valid (%s, schema v%d after upgrade, %d operator sets, %d "
      "fusing patterns)\n",
      path.c_str(), tpc->name().c_str(), tpc->schema_version(),
      tpc->operator_set_size(), tpc->fusing_patterns_size());
  return 0;
}

int Diff(const Args& a) {
  if (a.positional.size() != 2) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  std::string la, lb;
  auto ta = Load(a.positional[0], a.tpc_dir, &la);
  if (!ta.ok()) return Fail(ta.status());
  auto tb = Load(a.positional[1], a.tpc_dir, &lb);
  if (!tb.ok()) return Fail(tb.status());
  const tpc::TpcDiff diff = tpc::DiffTpcs(*ta, *tb);
  std::printf("%s", tpc::RenderTpcDiff(diff, la, lb, *ta, *tb).c_str());
  return 0;
}

int RunTpc(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    std::fprintf(stderr, "%s", kUsage);
    return args.empty() ? 2 : 0;
  }
  const Args a = ParseArgs(args, 1);
  if (!a.error.empty()) {
    std::fprintf(stderr, "quantctl tpc: %s\n%s", a.error.c_str(), kUsage);
    return 2;
  }
  if (args[0] == "list") return List(a);
  if (args[0] == "show") return Show(a);
  if (args[0] == "validate") return Validate(a);
  if (args[0] == "diff") return Diff(a);
  std::fprintf(stderr, "quantctl tpc: unknown subcommand '%s'\n%s",
               args[0].c_str(), kUsage);
  return 2;
}

}  // namespace

QUANTCTL_COMMAND(tpc, "tpc list|show|validate|diff ...", RunTpc);

}  // namespace quantd::quantctl
