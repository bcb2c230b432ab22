// Expected statistics for folded models as JSON:
//   {"conv1_out": {"mean": [0.1, ...], "std": [1.2, ...]}, ...}
// (tensor name -> per-channel mean and std of that tensor).
#ifndef QUANTD_CORE_DATAGEN_STATISTICS_JSON_H_
#define QUANTD_CORE_DATAGEN_STATISTICS_JSON_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/datagen/options.h"

namespace quantd::datagen {

absl::StatusOr<std::map<std::string, ChannelStats>> ParseStatisticsJson(
    const std::string& text);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_STATISTICS_JSON_H_
