// TPC validation: every rule MCT's schema enforces (mct-reference §3.2-3.3)
// plus sanity checks on values. All problems are collected into one
// INVALID_ARGUMENT whose message lists each with its field path, e.g.
//   operator_set[2] ("Conv").qc_options: 3 configurations but no base_config
#ifndef QUANTD_CORE_TPC_VALIDATION_H_
#define QUANTD_CORE_TPC_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

struct ValidationOptions {
  // MCT refuses a node config with both enable_activation_quantization and
  // quantization_preserving only when a node uses it; its own TFLite TPC has
  // such configs. By default this is a warning; strict makes it an error.
  bool strict = false;
};

// Every error, each "path: message". Empty when valid.
std::vector<std::string> TpcErrors(
    const quantd::v1::TargetPlatformCapabilities& tpc,
    const ValidationOptions& options = {});

// Things that are allowed but likely unintended (custom op set names, both
// activation quantization and preservation enabled when not strict).
std::vector<std::string> TpcWarnings(
    const quantd::v1::TargetPlatformCapabilities& tpc);

absl::Status ValidateTpc(const quantd::v1::TargetPlatformCapabilities& tpc,
                         const ValidationOptions& options = {});

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_VALIDATION_H_
