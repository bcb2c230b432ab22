// quantctl tpc list | show | validate | diff: the TPC library from the
// command line, in-process (no server needed).
#include <algorithm>
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

struct Args {
  std::vector<std::string> positional;
  std::string first, second;  // positional arguments as parsed
  std::string tpc_dir;
  bool json = false;
  bool strict = false;
  int schema = 2;
};

constexpr char kTpcDirHelp[] =
    "also load the TPC files (.json/.textproto) of this folder";

// One flag set per sub-verb ("tpc list", "tpc show", ...).
FlagSet Flags(const std::string& verb, Args* a) {
  const FlagOptions tpc_dir = {.aliases = {"tpc_dir"}};
  if (verb == "list") {
    FlagSet f("tpc list", "", "Lists the TPCs of the registry.");
    f.String("tpc-dir", "DIR", kTpcDirHelp, &a->tpc_dir, tpc_dir);
    return f;
  }
  if (verb == "show") {
    FlagSet f("tpc show", "NAME[@VERSION]|FILE",
              "Prints a TPC: a summary, or the JSON with --json.");
    f.Positional("NAME[@VERSION]|FILE", "a registry reference or a TPC file",
                 &a->first);
    f.Bool("json", "print the TPC as JSON", &a->json);
    f.Int("schema", "JSON schema version with --json", 1, 2, &a->schema,
          {.default_text = "2"});
    f.String("tpc-dir", "DIR", kTpcDirHelp, &a->tpc_dir, tpc_dir);
    return f;
  }
  if (verb == "validate") {
    FlagSet f("tpc validate", "FILE",
              "Checks a TPC file; exits 1 when it has errors.");
    f.Positional("FILE", "a .json or .textproto TPC", &a->first);
    f.Bool("strict", "also reject what the engine would only warn about",
           &a->strict);
    return f;
  }
  FlagSet f("tpc diff", "A B",
            "Prints what differs between two TPCs (registry references or "
            "files).");
  f.Positional("A", "NAME[@VERSION] or FILE", &a->first);
  f.Positional("B", "NAME[@VERSION] or FILE", &a->second);
  f.String("tpc-dir", "DIR", kTpcDirHelp, &a->tpc_dir, tpc_dir);
  return f;
}

constexpr const char* kVerbs[] = {"list", "show", "validate", "diff"};

std::vector<FlagSet> FlagSets() {
  static Args unused;
  std::vector<FlagSet> sets;
  for (const char* verb : kVerbs) sets.push_back(Flags(verb, &unused));
  return sets;
}

std::string TpcUsage() {
  std::string out = "usage: quantctl tpc list|show|validate|diff ... [flags]\n";
  for (const char* verb : kVerbs) {
    Args unused;
    absl::StrAppend(&out, "  ", Flags(verb, &unused).Usage().substr(7));
  }
  return out;
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
  std::string la, lb;
  auto ta = Load(a.positional[0], a.tpc_dir, &la);
  if (!ta.ok()) return Fail(ta.status());
  auto tb = Load(a.positional[1], a.tpc_dir, &lb);
  if (!tb.ok()) return Fail(tb.status());
  const tpc::TpcDiff diff = tpc::DiffTpcs(*ta, *tb);
  std::printf("%s", tpc::RenderTpcDiff(diff, la, lb, *ta, *tb).c_str());
  return 0;
}

int RunTpc(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "-h" || argv[0] == "--help" ||
      argv[0] == "help") {
    std::fprintf(argv.empty() ? stderr : stdout, "%s", TpcUsage().c_str());
    return argv.empty() ? 2 : 0;
  }
  const std::string& verb = argv[0];
  if (std::find(std::begin(kVerbs), std::end(kVerbs), verb) ==
      std::end(kVerbs)) {
    std::fprintf(stderr, "quantctl tpc: unknown sub-verb '%s'\n%s",
                 verb.c_str(), TpcUsage().c_str());
    return 2;
  }
  Args a;
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (int rc = Flags(verb, &a).ParseOrExit(rest); rc >= 0) return rc;
  a.positional = {a.first, a.second};
  if (verb == "list") return List(a);
  if (verb == "show") return Show(a);
  if (verb == "validate") return Validate(a);
  return Diff(a);
}

}  // namespace

QUANTCTL_COMMAND(tpc, "list, show, validate and diff TPCs (in-process)", RunTpc,
                 FlagSets);

}  // namespace quantd::quantctl
