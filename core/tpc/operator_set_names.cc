#include "core/tpc/operator_set_names.h"

#include <algorithm>

namespace quantd::tpc {

bool IsStandardOperatorSetName(std::string_view name, int schema_version) {
  if (std::find(kOperatorSetNamesV1.begin(), kOperatorSetNamesV1.end(), name) !=
      kOperatorSetNamesV1.end()) {
    return true;
  }
  return schema_version >= 2 &&
         std::find(kOperatorSetNamesV2Additions.begin(),
                   kOperatorSetNamesV2Additions.end(),
                   name) != kOperatorSetNamesV2Additions.end();
}

}  // namespace quantd::tpc
