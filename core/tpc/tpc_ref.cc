#include "core/tpc/tpc_ref.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace quantd::tpc {
namespace {

struct VersionParts {
  int major = 0;
  int minor = 0;
  bool has_minor = false;
  std::string extension;  // after "_", e.g. "lut"
};

std::optional<VersionParts> Parse(const std::string& v) {
  VersionParts p;
  std::string numeric = v;
  if (auto us = v.find('_'); us != std::string::npos) {
    numeric = v.substr(0, us);
    p.extension = v.substr(us + 1);
  }
  std::vector<std::string> parts = absl::StrSplit(numeric, '.');
  if (parts.empty() || parts.size() > 2) return std::nullopt;
  if (!absl::SimpleAtoi(parts[0], &p.major) || p.major < 0) return std::nullopt;
  if (parts.size() == 2) {
    if (!absl::SimpleAtoi(parts[1], &p.minor) || p.minor < 0) {
      return std::nullopt;
    }
    p.has_minor = true;
  }
  return p;
}

}  // namespace

absl::StatusOr<TpcRef> ParseTpcRef(std::string_view ref_view) {
  const std::string ref(ref_view);
  if (ref == "default") return TpcRef{"imx500", "1.0"};
  std::vector<std::string> parts = absl::StrSplit(ref, '@');
  if (parts.size() > 2 || parts[0].empty() ||
      (parts.size() == 2 && parts[1].empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad TPC reference '", ref, "' (expected NAME or NAME@VERSION)"));
  }
  TpcRef out{parts[0], parts.size() == 2 ? parts[1] : ""};
  if (out.version.size() > 1 &&
      (out.version[0] == 'v' || out.version[0] == 'V') &&
      std::isdigit(static_cast<unsigned char>(out.version[1]))) {
    out.version = out.version.substr(1);
  }
  return out;
}

std::optional<std::string> ResolveVersion(
    const std::string& requested, const std::vector<std::string>& available) {
  if (std::find(available.begin(), available.end(), requested) !=
      available.end()) {
    return requested;
  }
  std::optional<VersionParts> want;
  if (!requested.empty()) {
    want = Parse(requested);
    // A full major.minor that is not present does not fall back.
    if (!want || want->has_minor) return std::nullopt;
  }
  std::optional<std::string> best;
  std::tuple<int, int> best_key{-1, -1};
  for (const auto& v : available) {
    auto p = Parse(v);
    if (!p) continue;
    if (want) {
      if (p->major != want->major || p->extension != want->extension) continue;
    } else if (!p->extension.empty()) {
      continue;  // extended versions only when asked for
    }
    std::tuple<int, int> key{p->major, p->minor};
    if (!best || key > best_key) {
      best = v;
      best_key = key;
    }
  }
  return best;
}

}  // namespace quantd::tpc
