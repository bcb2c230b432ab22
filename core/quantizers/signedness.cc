#include "core/quantizers/signedness.h"

namespace quantd::quantizers {

bool DetermineActivationSignedness(Signedness tpc_signedness,
                                   std::optional<double> bounded_min,
                                   const Histogram* histogram) {
  if (tpc_signedness == Signedness::kSigned) return true;
  if (tpc_signedness == Signedness::kUnsigned) return false;
  if (bounded_min.has_value()) return *bounded_min < 0;
  if (histogram == nullptr) return false;
  for (size_t i = 0; i < histogram->counts.size(); ++i) {
    if (histogram->counts[i] > 0 && histogram->edges[i] < 0) return true;
  }
  return false;
}

}  // namespace quantd::quantizers
