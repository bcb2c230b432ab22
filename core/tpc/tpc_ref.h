// Parsing and resolving TPC references "name[@version]".
//
// Resolution (registry.h): exact version; a major only ("imx500@4", also
// "@v4") resolves to the latest minor of that major; an extended major
// ("@1_lut") to the latest minor with that extension; no version to the
// latest plain version; "default" is imx500@1.0 (MCT's default TPC).
#ifndef QUANTD_CORE_TPC_TPC_REF_H_
#define QUANTD_CORE_TPC_TPC_REF_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace quantd::tpc {

struct TpcRef {
  std::string name;
  std::string version;  // empty: latest
};

// "imx500@4.1" -> {imx500, 4.1}; "default" -> {imx500, 1.0}. A leading "v"
// on the version is dropped. Errors on empty parts or more than one "@".
absl::StatusOr<TpcRef> ParseTpcRef(std::string_view ref);

// Picks from `available` (versions of one name) what `requested` resolves to,
// or nullopt.
std::optional<std::string> ResolveVersion(
    const std::string& requested, const std::vector<std::string>& available);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_TPC_REF_H_
