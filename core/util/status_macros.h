// Status propagation macros. Debian's Abseil (20220623) has no status_macros.h,
// so these mirror upstream's ABSL_RETURN_IF_ERROR / ASSIGN_OR_RETURN semantics.
// Prefixed names the field an error came from.
//
//   RETURN_IF_ERROR(ValidateTpc(tpc));
//   ASSIGN_OR_RETURN(Graph graph, ImportOnnx(bytes));
//   if (!ref.ok()) return Prefixed("tpc.name", ref.status());
#ifndef QUANTD_CORE_UTIL_STATUS_MACROS_H_
#define QUANTD_CORE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#define QUANTD_STATUS_CONCAT_INNER_(x, y) x##y
#define QUANTD_STATUS_CONCAT_(x, y) QUANTD_STATUS_CONCAT_INNER_(x, y)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status quantd_status_ = (expr);          \
    if (!quantd_status_.ok()) return quantd_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, rexpr) \
  QUANTD_ASSIGN_OR_RETURN_IMPL_(     \
      QUANTD_STATUS_CONCAT_(quantd_statusor_, __LINE__), lhs, rexpr)

#define QUANTD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

namespace quantd {

// "field: message", with the status's code.
inline absl::Status Prefixed(absl::string_view field,
                             const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(field, ": ", status.message()));
}

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_STATUS_MACROS_H_
