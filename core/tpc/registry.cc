#include "core/tpc/registry.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tpc/builtins.h"
#include "core/tpc/json_io.h"
#include "core/tpc/tpc_ref.h"
#include "core/tpc/validation.h"
#include "core/util/sha256.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace quantd::tpc {

using quantd::v1::TargetPlatformCapabilities;

std::string TpcDigest(const TargetPlatformCapabilities& tpc) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    tpc.SerializeToCodedStream(&out);
  }
  return Sha256Hex(bytes);
}

TpcRegistry::TpcRegistry(size_t inline_capacity)
    : inline_capacity_(inline_capacity == 0 ? 1 : inline_capacity) {
  stats_.capacity = inline_capacity_;
}

absl::Status TpcRegistry::AddBuiltins() {
  for (auto& b : BuiltinTpcs()) {
    absl::Status s = Add(b.name, b.version, std::move(b.tpc), "builtin");
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status TpcRegistry::Add(const std::string& name,
                              const std::string& version,
                              TargetPlatformCapabilities tpc,
                              const std::string& source) {
  if (name.empty() || version.empty() || absl::StrContains(name, "@") ||
      absl::StrContains(version, "@")) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": bad TPC key '", name, "@", version, "'"));
  }
  absl::Status valid = ValidateTpc(tpc);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", valid.message()));
  }
  tpc.set_version(version);
  RegistryEntry entry{
      name, version, TpcDigest(tpc), source,
      std::make_shared<const TargetPlatformCapabilities>(std::move(tpc))};
  std::unique_lock lock(mu_);
  named_[name][version] = std::move(entry);
  return absl::OkStatus();
}

absl::Status TpcRegistry::LoadDirectory(const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext == ".json" || ext == ".textproto" || ext == ".txtpb" ||
        ext == ".pbtxt") {
      files.push_back(e.path());
    }
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot read TPC directory ", dir, ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> errors;
  for (const auto& path : files) {
    auto tpc = LoadTpcFile(path.string());
    if (!tpc.ok()) {
      errors.push_back(std::string(tpc.status().message()));
      continue;
    }
    std::string name, version;
    const std::string stem = path.stem().string();
    if (auto at = stem.find('@'); at != std::string::npos) {
      name = stem.substr(0, at);
      version = stem.substr(at + 1);
    } else {
      name =
          tpc->has_tpc_platform_type() ? tpc->tpc_platform_type() : tpc->name();
      version = tpc->version();
      if (version.empty() && tpc->has_tpc_minor_version()) {
        version = absl::StrCat(tpc->tpc_minor_version(), ".",
                               tpc->tpc_patch_version());
      }
    }
    if (version.empty()) {
      errors.push_back(absl::StrCat(
          path.string(), ": no version (name the file NAME@VERSION",
          path.extension().string(), " or set version / tpc_minor_version)"));
      continue;
    }
    absl::Status s = Add(name, version, *std::move(tpc), path.string());
    if (!s.ok()) errors.push_back(std::string(s.message()));
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TPC directory ", dir, ": ", errors.size(),
                     " bad files:\n", absl::StrJoin(errors, "\n")));
  }
  return absl::OkStatus();
}

std::string TpcRegistry::AvailableList() const {
  std::vector<std::string> all;
  for (const auto& [name, versions] : named_) {
    for (const auto& [version, entry] : versions) {
      all.push_back(absl::StrCat(name, "@", version));
    }
  }
  return all.empty() ? "none" : absl::StrJoin(all, ", ");
}

absl::StatusOr<RegistryEntry> TpcRegistry::ResolveEntry(
    std::string_view ref_text) const {
  auto ref = ParseTpcRef(ref_text);
  if (!ref.ok()) return ref.status();
  std::shared_lock lock(mu_);
  auto it = named_.find(ref->name);
  if (it != named_.end()) {
    std::vector<std::string> versions;
    for (const auto& [v, e] : it->second) versions.push_back(v);
    if (auto v = ResolveVersion(ref->version, versions)) {
      return it->second.at(*v);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "TPC '", std::string(ref_text),
      "' not found; available: ", AvailableList(), " (and \"default\")"));
}

absl::StatusOr<TpcPtr> TpcRegistry::Resolve(std::string_view ref) const {
  auto entry = ResolveEntry(ref);
  if (!entry.ok()) return entry.status();
  return entry->tpc;
}

absl::StatusOr<TpcPtr> TpcRegistry::ResolveInline(
    const TargetPlatformCapabilities& tpc) const {
  const std::string key =
      absl::StrCat(tpc.name(), "@", tpc.version(), "#", TpcDigest(tpc));
  {
    std::unique_lock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->tpc;
    }
    ++stats_.misses;
  }
  // Validate outside the lock: it is the expensive part.
  absl::Status valid = ValidateTpc(tpc);
  if (!valid.ok()) return valid;
  auto shared = std::make_shared<const TargetPlatformCapabilities>(tpc);
  std::unique_lock lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    // Another thread inserted it meanwhile.
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->tpc;
  }
  lru_.push_front({key, shared});
  index_[key] = lru_.begin();
  while (lru_.size() > inline_capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
    ++stats_.evictions;
  }
  return shared;
}

std::vector<RegistryEntry> TpcRegistry::List() const {
  std::shared_lock lock(mu_);
  std::vector<RegistryEntry> out;
  for (const auto& [name, versions] : named_) {
    for (const auto& [version, entry] : versions) out.push_back(entry);
  }
  return out;
}

InlineCacheStats TpcRegistry::inline_stats() const {
  std::shared_lock lock(mu_);
  InlineCacheStats s = stats_;
  s.size = lru_.size();
  return s;
}

}  // namespace quantd::tpc
