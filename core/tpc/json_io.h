// MCT's TPC JSON interchange: reads what MCT's
// export_target_platform_capabilities writes (schema v1 and v2) and writes
// ours in the same form (same keys in the same order, enums as integers,
// 4-space indent), so MCT's load_target_platform_capabilities accepts it.
// Also the protobuf text format, for TPC directories.
#ifndef QUANTD_CORE_TPC_JSON_IO_H_
#define QUANTD_CORE_TPC_JSON_IO_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

struct JsonLoadOptions {
  // Upgrade schema v1 to v2 the way MCT's loader does (schema_upgrade.h).
  bool upgrade_to_v2 = true;
};

// Parses MCT TPC JSON. Errors are INVALID_ARGUMENT and name the JSON path of
// every offending field, e.g. `operator_set[3].qc_options.
// quantization_configurations[0].activation_n_bits: expected an integer`.
// Accepts the older API's names where they map 1:1 (docs/tpc.md). Does not
// run ValidateTpc.
absl::StatusOr<quantd::v1::TargetPlatformCapabilities> TpcFromJson(
    std::string_view text, const JsonLoadOptions& options = {});

struct JsonExportOptions {
  // 1 omits the v2-only fields; 2 is MCT's current schema (a v1 TPC is
  // upgraded first, schema_upgrade.h).
  int schema_version = 2;
  // Adds our "version" key (the registry key); MCT ignores unknown keys.
  bool include_version = false;
};

std::string TpcToJson(const quantd::v1::TargetPlatformCapabilities& tpc,
                      const JsonExportOptions& options = {});

absl::StatusOr<quantd::v1::TargetPlatformCapabilities> TpcFromTextproto(
    std::string_view text);

// Reads a file: `.json` as MCT JSON, `.textproto`/`.txtpb`/`.pbtxt` as
// text format. Errors name the file.
absl::StatusOr<quantd::v1::TargetPlatformCapabilities> LoadTpcFile(
    const std::string& path, const JsonLoadOptions& options = {});

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_JSON_IO_H_
