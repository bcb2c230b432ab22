// What differs between two TPCs, op set by op set: metadata, default_qco,
// added / removed op sets, changed options with field-level detail, and
// fusing pattern changes. Used by `quantctl tpc diff`.
#ifndef QUANTD_CORE_TPC_TPC_DIFF_H_
#define QUANTD_CORE_TPC_TPC_DIFF_H_

#include <string>
#include <vector>

#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

struct TpcDiff {
  std::vector<std::string> metadata;  // "tpc_minor_version: 1 -> 4"
  std::vector<std::string> default_qco;
  std::vector<std::string> added_op_sets;    // names
  std::vector<std::string> removed_op_sets;  // names
  // name -> field-level lines ("configurations: 1 -> 2", "[0].activation_
  // n_bits: 8 -> 16", ...)
  std::vector<std::pair<std::string, std::vector<std::string>>> changed_op_sets;
  std::vector<std::string> fusing;  // "+ A -> B", "- ...", "~ ...: ..."

  bool empty() const;
};

// Ignores the registry-only `version` field.
TpcDiff DiffTpcs(const quantd::v1::TargetPlatformCapabilities& a,
                 const quantd::v1::TargetPlatformCapabilities& b);

// Text report; `a_label` / `b_label` name the two sides.
std::string RenderTpcDiff(const TpcDiff& diff, const std::string& a_label,
                          const std::string& b_label,
                          const quantd::v1::TargetPlatformCapabilities& a,
                          const quantd::v1::TargetPlatformCapabilities& b);

// Field-by-field differences of two messages of the same type, as
// "path: old -> new" lines (repeated fields by index, maps by key, unset
// optional fields as null).
std::vector<std::string> MessageFieldDiffs(const google::protobuf::Message& a,
                                           const google::protobuf::Message& b,
                                           const std::string& prefix = "");

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_TPC_DIFF_H_
