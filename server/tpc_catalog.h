// The server's view of the TPC registry (core/tpc/registry.h): listing,
// lookup with MCT JSON, validation reports, and resolution of a job's TpcRef
// with errors that name the request field and list what exists.
#ifndef QUANTD_SERVER_TPC_CATALOG_H_
#define QUANTD_SERVER_TPC_CATALOG_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/pipeline/job/preflight.h"
#include "core/tpc/registry.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/quantization_service.pb.h"
#include "server/metrics.h"

namespace quantd::server {

class TpcCatalog {
 public:
  // Built-in TPCs plus every TPC file in `tpc_dir` (if not empty). Inline
  // MCT JSON longer than `max_json_bytes` (0 = unlimited) is rejected before
  // it is parsed: parsing costs about 20 times the text.
  static absl::StatusOr<std::unique_ptr<TpcCatalog>> Create(
      const std::string& tpc_dir, int64_t max_json_bytes = 0);

  std::vector<v1::TpcSummary> List() const;
  // NOT_FOUND lists the known ids.
  absl::StatusOr<v1::GetTpcResponse> Get(const std::string& name) const;
  v1::ValidateTpcResponse Validate(const v1::ValidateTpcRequest& request) const;
  // The TPC a job with this reference uses (core/pipeline/preflight.h's
  // ResolveTpc, after the --max_tpc_json_kb check); inline TPCs are
  // validated and cached by the registry.
  absl::StatusOr<ResolvedTpc> Resolve(const v1::TpcRef& ref) const;

  const tpc::TpcRegistry* registry() const { return &registry_; }
  // Copies the registry's cache hit/miss counters into the metrics.
  void UpdateCacheMetrics(Metrics& metrics) const;

 private:
  TpcCatalog() = default;
  // INVALID_ARGUMENT naming `field` and --max_tpc_json_kb if `json` is over.
  absl::Status CheckJsonSize(absl::string_view field,
                             const std::string& json) const;

  tpc::TpcRegistry registry_;
  int64_t max_json_bytes_ = 0;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_TPC_CATALOG_H_
