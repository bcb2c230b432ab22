#include "server/fault_injection.h"

#include <stdexcept>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace quantd::server {
namespace {

bool ValidStageName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<FaultInjection> FaultInjection::Parse(const std::string& spec) {
  FaultInjection out;
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const std::vector<std::string> parts = absl::StrSplit(item, ':');
    const auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fault_injection: '", item, "': ", why,
                       " (expected stall:STAGE, fail:STAGE or throw:STAGE)"));
    };
    if (parts.size() != 2) return bad("not KIND:STAGE");
    Kind kind;
    if (parts[0] == "stall") {
      kind = Kind::kStall;
    } else if (parts[0] == "fail") {
      kind = Kind::kFail;
    } else if (parts[0] == "throw") {
      kind = Kind::kThrow;
    } else {
      return bad(absl::StrCat("unknown kind '", parts[0], "'"));
    }
    if (!ValidStageName(parts[1])) {
      return bad("the stage must be a lower-case stage name");
    }
    out.faults_[parts[1]] = kind;
  }
  return out;
}

std::string FaultInjection::ToString() const {
  std::vector<std::string> items;
  for (const auto& [stage, kind] : faults_) {
    const char* name = kind == Kind::kStall  ? "stall"
                       : kind == Kind::kFail ? "fail"
                                             : "throw";
    items.push_back(absl::StrCat(name, ":", stage));
  }
  return absl::StrJoin(items, ",");
}

std::function<absl::Status(const std::string&)> FaultInjection::HookFor(
    const CancellationToken* token) const {
  if (faults_.empty()) return nullptr;
  return [faults = faults_, token](const std::string& stage) -> absl::Status {
    const auto it = faults.find(stage);
    if (it == faults.end()) return absl::OkStatus();
    switch (it->second) {
      case Kind::kStall:
        if (token == nullptr) {
          return absl::InternalError("stall fault injected without a token");
        }
        return token->WaitUntilCancelled();
      case Kind::kFail:
        return absl::InternalError(
            absl::StrCat("fault injected at stage '", stage, "'"));
      case Kind::kThrow:
        throw std::runtime_error(
            absl::StrCat("fault injected at stage '", stage, "'"));
    }
    return absl::OkStatus();
  };
}

}  // namespace quantd::server
