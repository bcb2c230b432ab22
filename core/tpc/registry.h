// TpcRegistry: the TPCs a process can serve. Built-ins, a directory of TPC
// files (--tpc_dir, JSON or textproto) and inline TPCs from requests, which
// are cached by name, version and content digest in a bounded LRU.
// Thread-safe; returned TPCs are immutable and shared.
//
//   TpcRegistry registry;
//   RETURN_IF_ERROR(registry.AddBuiltins());
//   ASSIGN_OR_RETURN(auto tpc, registry.Resolve("imx500@4"));  // -> 4.1
#ifndef QUANTD_CORE_TPC_REGISTRY_H_
#define QUANTD_CORE_TPC_REGISTRY_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

using TpcPtr = std::shared_ptr<const quantd::v1::TargetPlatformCapabilities>;

struct RegistryEntry {
  std::string name;
  std::string version;
  std::string digest;  // SHA-256 hex of the deterministic serialization
  std::string source;  // "builtin", a file path, or "inline"
  TpcPtr tpc;
};

struct InlineCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  size_t size = 0;
  size_t capacity = 0;
};

// SHA-256 hex of the TPC's deterministic protobuf serialization.
std::string TpcDigest(const quantd::v1::TargetPlatformCapabilities& tpc);

class TpcRegistry {
 public:
  explicit TpcRegistry(size_t inline_capacity = 64);

  // Adds every built-in (builtins.h).
  absl::Status AddBuiltins();

  // Validates and adds a named TPC; replaces an existing name@version (a
  // directory may override a built-in).
  absl::Status Add(const std::string& name, const std::string& version,
                   quantd::v1::TargetPlatformCapabilities tpc,
                   const std::string& source);

  // Loads every *.json / *.textproto / *.txtpb / *.pbtxt in `dir` (not
  // recursive). A file named NAME@VERSION.ext gives its key; otherwise the
  // name is tpc_platform_type (else name) and the version the TPC's version
  // field (else "<tpc_minor_version>.<tpc_patch_version or 0>"). All bad files
  // are reported together; good ones are still added.
  absl::Status LoadDirectory(const std::string& dir);

  // Resolves "name[@version]" or "default". NOT_FOUND lists what exists.
  absl::StatusOr<TpcPtr> Resolve(std::string_view ref) const;
  absl::StatusOr<RegistryEntry> ResolveEntry(std::string_view ref) const;

  // An inline TPC from a request: validated once, then cached by
  // name@version#digest. Identical content shares one instance. Const: the
  // cache is internal, synchronised state; callers see no change.
  absl::StatusOr<TpcPtr> ResolveInline(
      const quantd::v1::TargetPlatformCapabilities& tpc) const;

  // Named entries sorted by name then version.
  std::vector<RegistryEntry> List() const;

  InlineCacheStats inline_stats() const;

 private:
  struct InlineSlot {
    std::string key;
    TpcPtr tpc;
  };

  // Callers hold mu_.
  std::string AvailableList() const;

  // std::shared_mutex rather than absl::Mutex: Debian's Abseil is not
  // TSan-instrumented, libstdc++'s pthread locks are.
  mutable std::shared_mutex mu_;
  // Guarded by mu_. name -> version -> entry.
  std::map<std::string, std::map<std::string, RegistryEntry>> named_;
  // The inline cache, most recently used first.
  mutable std::list<InlineSlot> lru_;  // guarded by mu_
  mutable std::unordered_map<std::string, std::list<InlineSlot>::iterator>
      index_;  // guarded by mu_
  const size_t inline_capacity_;
  mutable InlineCacheStats stats_;  // guarded by mu_
};

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_REGISTRY_H_
