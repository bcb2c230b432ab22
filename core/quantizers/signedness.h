// Activation signedness (MCT's _determine_signedness): a TPC-forced value
// wins; otherwise a bounded output is signed iff its known min < 0; otherwise
// the histogram decides (any non-empty bin whose left edge is < 0).
// Weights are always signed.
#ifndef QUANTD_CORE_QUANTIZERS_SIGNEDNESS_H_
#define QUANTD_CORE_QUANTIZERS_SIGNEDNESS_H_

#include <optional>

#include "core/quantizers/types.h"

namespace quantd::quantizers {

enum class Signedness { kAuto = 0, kSigned = 1, kUnsigned = 2 };

// `bounded_min`: the known minimum of a bounded output (both bounds known),
// else nullopt. `histogram` may be null when the output is bounded.
bool DetermineActivationSignedness(Signedness tpc_signedness,
                                   std::optional<double> bounded_min,
                                   const Histogram* histogram);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_SIGNEDNESS_H_
