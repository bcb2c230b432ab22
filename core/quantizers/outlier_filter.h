// Z-score outlier removal on a histogram (MCT's z_score_filter): bins whose
// left edge is more than z_threshold standard deviations from the histogram
// mean get count 0. z_threshold = inf disables it.
#ifndef QUANTD_CORE_QUANTIZERS_OUTLIER_FILTER_H_
#define QUANTD_CORE_QUANTIZERS_OUTLIER_FILTER_H_

#include "absl/status/statusor.h"
#include "core/quantizers/types.h"

namespace quantd::quantizers {

// The histogram with outlier counts zeroed (edges unchanged).
absl::StatusOr<Histogram> ZScoreFilter(double z_threshold,
                                       const Histogram& histogram);

}  // namespace quantd::quantizers

#endif  // QUANTD_CORE_QUANTIZERS_OUTLIER_FILTER_H_
