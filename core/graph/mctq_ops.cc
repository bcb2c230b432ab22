#include "core/graph/mctq_ops.h"

#include "absl/strings/str_cat.h"

namespace quantd {

bool IsMctqQuantizerOp(absl::string_view domain, absl::string_view op_type) {
  if (domain != kMctqDomain) return false;
  for (absl::string_view op :
       {kActivationPotQuantizer, kActivationSymmetricQuantizer,
        kActivationUniformQuantizer, kWeightsPotQuantizer,
        kWeightsSymmetricQuantizer, kWeightsUniformQuantizer,
        kWeightsLutPotQuantizer, kWeightsLutSymmetricQuantizer}) {
    if (op == op_type) return true;
  }
  return false;
}

std::string QualifiedOpType(absl::string_view domain,
                            absl::string_view op_type) {
  return absl::StrCat(domain, "::", op_type);
}

}  // namespace quantd
