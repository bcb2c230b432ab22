#include "server/tpc_catalog.h"

#include "absl/strings/str_cat.h"
#include "core/tpc/json_io.h"
#include "core/tpc/validation.h"
#include "core/util/status_macros.h"

namespace quantd::server {
namespace {

v1::TpcSummary Summary(const tpc::RegistryEntry& entry) {
  v1::TpcSummary s;
  s.set_name(entry.name);
  s.set_version(entry.version);
  s.set_id(absl::StrCat(entry.name, "@", entry.version));
  s.set_digest(entry.digest);
  s.set_source(entry.source);
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TpcCatalog>> TpcCatalog::Create(
    const std::string& tpc_dir, int64_t max_json_bytes) {
  std::unique_ptr<TpcCatalog> catalog(new TpcCatalog());
  catalog->max_json_bytes_ = max_json_bytes;
  if (absl::Status s = catalog->registry_.AddBuiltins(); !s.ok()) return s;
  if (!tpc_dir.empty()) {
    if (absl::Status s = catalog->registry_.LoadDirectory(tpc_dir); !s.ok()) {
      return Prefixed("--tpc_dir", s);
    }
  }
  return catalog;
}

absl::Status TpcCatalog::CheckJsonSize(absl::string_view field,
                                       const std::string& json) const {
  if (max_json_bytes_ <= 0 ||
      static_cast<int64_t>(json.size()) <= max_json_bytes_) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", json.size(), " bytes of JSON exceed the limit of ",
      max_json_bytes_, " bytes (--max_tpc_json_kb=", max_json_bytes_ >> 10,
      "); send the TPC as a proto (inline_tpc) or install it in --tpc_dir"));
}

std::vector<v1::TpcSummary> TpcCatalog::List() const {
  std::vector<v1::TpcSummary> out;
  for (const tpc::RegistryEntry& entry : registry_.List()) {
    out.push_back(Summary(entry));
  }
  return out;
}

absl::StatusOr<v1::GetTpcResponse> TpcCatalog::Get(
    const std::string& name) const {
  auto entry = registry_.ResolveEntry(name);
  if (!entry.ok()) return Prefixed("name", entry.status());
  v1::GetTpcResponse response;
  *response.mutable_summary() = Summary(*entry);
  *response.mutable_tpc() = *entry->tpc;
  response.set_mct_json(tpc::TpcToJson(*entry->tpc));
  return response;
}

v1::ValidateTpcResponse TpcCatalog::Validate(
    const v1::ValidateTpcRequest& request) const {
  v1::ValidateTpcResponse response;
  v1::TargetPlatformCapabilities tpc;
  switch (request.source_case()) {
    case v1::ValidateTpcRequest::kTpc:
      tpc = request.tpc();
      break;
    case v1::ValidateTpcRequest::kMctJson: {
      if (absl::Status s = CheckJsonSize("mct_json", request.mct_json());
          !s.ok()) {
        response.add_errors(std::string(s.message()));
        return response;
      }
      auto parsed = tpc::TpcFromJson(request.mct_json());
      if (!parsed.ok()) {
        response.add_errors(std::string(parsed.status().message()));
        return response;
      }
      tpc = *std::move(parsed);
      break;
    }
    case v1::ValidateTpcRequest::SOURCE_NOT_SET:
      response.add_errors("source: set tpc or mct_json");
      return response;
  }
  for (std::string& error : tpc::TpcErrors(tpc)) {
    response.add_errors(std::move(error));
  }
  for (std::string& warning : tpc::TpcWarnings(tpc)) {
    response.add_warnings(std::move(warning));
  }
  response.set_valid(response.errors_size() == 0);
  return response;
}

absl::StatusOr<ResolvedTpc> TpcCatalog::Resolve(const v1::TpcRef& ref) const {
  if (ref.source_case() == v1::TpcRef::kInlineJson) {
    RETURN_IF_ERROR(CheckJsonSize("tpc.inline_json", ref.inline_json()));
  }
  return ResolveTpc(ref, registry_);
}

void TpcCatalog::UpdateCacheMetrics(Metrics& metrics) const {
  const tpc::InlineCacheStats stats = registry_.inline_stats();
  metrics.SetTpcCacheCounters(static_cast<int64_t>(stats.hits),
                              static_cast<int64_t>(stats.misses));
}

}  // namespace quantd::server
